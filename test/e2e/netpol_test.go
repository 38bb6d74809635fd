package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/netpol"
	"github.com/skiff-sh/skiff/internal/proxy"
)

// Issue 25's own NetworkPolicy test: three workers, two namespaces, pods on every node, and every
// check made both ways. A connection that must pass is answered, and the server saw the client
// pod's own address. A connection that must be dropped is proven dropped, not assumed: the same
// pair (or the same client to the same server on another port) connected before, the attempt ends
// in a timeout (a refusal would mean the packet reached the pod), and the drop counter of the
// direction grew on the node that judges it (ingress: the server's node; egress: the client's).
// A port the policy allows but nothing listens on answers "refused": the packet got through.

const (
	npA = "netpol-a"
	npB = "netpol-b"
)

// npPod is one pod of the test: where it runs, what it serves, its labels and container ports.
type npPod struct {
	name, ns string
	worker   int // index into podNetCluster.workers
	labels   string
	serve    []string // nettool serve specs
	ports    string
	ip       string
}

// npPods are the test's pods: two servers in A (srv1 on worker-1, srv2 on worker-2, whose named
// ports differ: "http" is 8080 on srv1 and 8081 on srv2, "spare" is 8082 with no listener on both,
// and only srv1 answers UDP 53), two clients in A (front, other) and two in B (b1, b2), each also
// answering HTTP on 8080 (its readiness probe). Same-node pairs: b1-srv1 (worker-1), front-srv2
// (worker-2), other-b2 (worker-3).
func npPods() []*npPod {
	client := "[{name: http, containerPort: 8080}]"
	return []*npPod{
		{name: "srv1", ns: npA, worker: 0, labels: "{app: srv, inst: one}", serve: []string{"tcp:8080", "tcp:8081", "udp:53"},
			ports: "[{name: http, containerPort: 8080}, {name: alt, containerPort: 8081}, {name: spare, containerPort: 8082}, {name: dns, containerPort: 53, protocol: UDP}]"},
		{name: "srv2", ns: npA, worker: 1, labels: "{app: srv, inst: two}", serve: []string{"tcp:8080", "tcp:8081"},
			ports: "[{name: alt, containerPort: 8080}, {name: http, containerPort: 8081}, {name: spare, containerPort: 8082}]"},
		{name: "front", ns: npA, worker: 1, labels: "{role: front}", serve: []string{"tcp:8080"}, ports: client},
		{name: "other", ns: npA, worker: 2, labels: "{role: other}", serve: []string{"tcp:8080"}, ports: client},
		{name: "b1", ns: npB, worker: 0, labels: "{app: b}", serve: []string{"tcp:8080"}, ports: client},
		{name: "b2", ns: npB, worker: 2, labels: "{app: b, role: front}", serve: []string{"tcp:8080"}, ports: client},
	}
}

// manifest is the pod's manifest, nettool by hostPath as in the pod network test.
func (p *npPod) manifest(pc *podNetCluster) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
  labels: %s
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 1
  containers:
  - name: net
    image: localhost/busybox:local
    command: ["/tools/nettool", "serve", "%s"]
    ports: %s
    readinessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
    volumeMounts: [{name: tools, mountPath: /tools}]
  volumes:
  - name: tools
    hostPath: {path: %s}
---
`, p.name, p.ns, p.labels, pc.workers[p.worker].name, strings.Join(p.serve, `", "`), p.ports, pc.tools)
}

const npServices = `apiVersion: v1
kind: Service
metadata: {name: one, namespace: netpol-a}
spec:
  selector: {inst: one}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: two, namespace: netpol-a}
spec:
  selector: {inst: two}
  ports: [{port: 80, targetPort: 8080}]
`

// outcome is what a connection attempt must come to.
type outcome string

const (
	passes     outcome = "accepted"
	refused    outcome = "refused"
	droppedIn  outcome = "dropped on ingress"
	droppedOut outcome = "dropped on egress"
)

// conn is one connection attempt: from a pod to the pod that must answer it (the backend, for a
// Service), at that pod's address or at addr (a cluster IP or a DNS name).
type conn struct {
	from, to string
	proto    string // "tcp" (HTTP) or "udp"
	port     int
	addr     string
	want     outcome
}

func tcp(from, to string, port int, want outcome) conn {
	return conn{from: from, to: to, proto: "tcp", port: port, want: want}
}

func udp(from, to string, port int, want outcome) conn {
	return conn{from: from, to: to, proto: "udp", port: port, want: want}
}

// via is c sent to addr (a Service's cluster IP or name) instead of the pod's address.
func (c conn) via(addr string) conn { c.addr = addr; return c }

// netpolRig is the test's cluster and pods.
type netpolRig struct {
	pc   *podNetCluster
	pods map[string]*npPod
	vips map[string]string
}

func (r *netpolRig) target(c conn) string {
	addr := c.addr
	if addr == "" {
		addr = r.pods[c.to].ip
	}
	return fmt.Sprintf("%s:%s:%d", c.proto, addr, c.port)
}

func (r *netpolRig) describe(c conn) string {
	via := ""
	if c.addr != "" {
		via = " via " + c.addr
	}
	return fmt.Sprintf("%s -> %s%s %s/%d", c.from, c.to, via, c.proto, c.port)
}

// judge is the node and counter that must count c's drop.
func (r *netpolRig) judge(c conn) (w *joinedNode, counter string) {
	if c.want == droppedOut {
		return r.pc.workers[r.pods[c.from].worker], netpol.CounterDroppedEgress
	}
	return r.pc.workers[r.pods[c.to].worker], netpol.CounterDroppedIngress
}

// expect retries the attempts (the agent converges after a policy change) until every one comes
// to its outcome in the same round, with the drop counters grown by at least one packet per
// attempt dropped on their node in that round.
func (r *netpolRig) expect(t *testing.T, conns ...conn) {
	t.Helper()
	eventually(t, 120*time.Second, func() error { return r.try(conns) })
}

type counterKey struct {
	w       *joinedNode
	counter string
}

func (r *netpolRig) try(conns []conn) error {
	drops := map[counterKey]uint64{}
	for _, c := range conns {
		if c.want == droppedIn || c.want == droppedOut {
			w, counter := r.judge(c)
			drops[counterKey{w, counter}]++
		}
	}
	before := map[counterKey]uint64{}
	for k := range drops {
		n, err := dropCounter(k.w, k.counter)
		if err != nil {
			return err
		}
		before[k] = n
	}
	results, err := r.probe(conns)
	if err != nil {
		return err
	}
	var problems []string
	for i, c := range conns {
		if p := r.check(c, results[i]); p != "" {
			problems = append(problems, p)
		}
	}
	for k, n := range drops {
		after, err := dropCounter(k.w, k.counter)
		if err != nil {
			return err
		}
		if after < before[k]+n {
			problems = append(problems, fmt.Sprintf("%s's %s counter went from %d to %d, want %d more packets or more", k.w.name, k.counter, before[k], after, n))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d of %d checks not met:\n%s", len(problems), len(conns), strings.Join(problems, "\n"))
	}
	return nil
}

// check is "" when result (a nettool probe result) is what c must come to.
func (r *netpolRig) check(c conn, result string) string {
	var ok bool
	switch c.want {
	case passes:
		// The right pod answered, and saw the client pod's own address (no NAT between pods).
		ok = result == fmt.Sprintf("accepted %s %s", c.to, r.pods[c.from].ip)
	case refused:
		ok = result == "refused"
	case droppedIn, droppedOut:
		ok = result == "timeout"
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("%s: %q, want %s", r.describe(c), result, c.want)
}

// probe runs the attempts, those of one client pod in one nettool probe (all at once), the
// clients in parallel, and returns the results in the order of conns.
func (r *netpolRig) probe(conns []conn) ([]string, error) {
	byClient := map[string][]int{}
	for i, c := range conns {
		byClient[c.from] = append(byClient[c.from], i)
	}
	results := make([]string, len(conns))
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for from, idx := range byClient {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := []string{"exec", "-n", r.pods[from].ns, from, "--", "/tools/nettool", "probe"}
			for _, i := range idx {
				args = append(args, r.target(conns[i]))
			}
			out, err := r.pc.c.kubectlErr(args...)
			if err != nil {
				errs[idx[0]] = fmt.Errorf("probe from %s: %v\n%s", from, err, out)
				return
			}
			lines := strings.Split(out, "\n")
			for _, i := range idx {
				prefix := r.target(conns[i]) + " "
				for j, l := range lines {
					if strings.HasPrefix(l, prefix) {
						results[i] = strings.TrimPrefix(l, prefix)
						lines = lines[j+1:]
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return results, nil
}

var packetsRE = regexp.MustCompile(`packets (\d+)`)

// dropCounter reads one of the policy agent's drop counters on a worker, in its namespace.
func dropCounter(w *joinedNode, counter string) (uint64, error) {
	table := netpol.Table(proxy.NodePrefix(w.dataDir))
	out, err := w.host.Command("nft", "list", "counter", "ip", table, counter).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("nft list counter ip %s %s on %s: %v\n%s", table, counter, w.name, err, out)
	}
	m := packetsRE.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no packet count in %s's counter %s:\n%s", w.name, counter, out)
	}
	return strconv.ParseUint(string(m[1]), 10, 64)
}

// nodeReaches checks that each listed pod's own node connects to it (the kubelet's probes take
// that path): the node's traffic is never judged by policy.
func (r *netpolRig) nodeReaches(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		p := r.pods[name]
		w := r.pc.workers[p.worker]
		out, err := w.host.Command(filepath.Join(r.pc.tools, "nettool"), "probe", fmt.Sprintf("tcp:%s:8080", p.ip)).CombinedOutput()
		if want := fmt.Sprintf("tcp:%s:8080 accepted %s ", p.ip, name); err != nil || !strings.HasPrefix(string(out), want) {
			t.Errorf("%s -> its pod %s: %v %q, want %q...", w.name, name, err, out, want)
		}
	}
}

// apply applies a manifest in the test's namespaces.
func (r *netpolRig) apply(t *testing.T, manifest string) {
	t.Helper()
	r.pc.forTest(t).c.stdin(manifest, "apply", "-f", "-")
}

func (r *netpolRig) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	return r.pc.forTest(t).c.kubectl(args...)
}

func newNetpolRig(t *testing.T) *netpolRig {
	pc := newPodNetCluster(t)
	c := pc.c
	r := &netpolRig{pc: pc, pods: map[string]*npPod{}, vips: map[string]string{}}
	var manifest strings.Builder
	manifest.WriteString("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + npA + "}\n---\n")
	manifest.WriteString("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + npB + "}\n---\n")
	for _, p := range npPods() {
		r.pods[p.name] = p
		manifest.WriteString(p.manifest(pc))
	}
	manifest.WriteString(npServices)
	c.stdin(manifest.String(), "apply", "-f", "-")
	t.Cleanup(func() {
		_, _ = c.kubectlErr("delete", "namespace", npA, npB, "--timeout=60s")
	})
	for _, ns := range []string{npA, npB} {
		eventually(t, 180*time.Second, func() error {
			out, err := c.kubectlErr("wait", "-n", ns, "--for=condition=Ready", "pod", "--all", "--timeout=2s")
			if err != nil {
				return errString(out + c.kubectl("get", "pods", "-A", "-o", "wide"))
			}
			return nil
		})
	}
	for _, p := range r.pods {
		p.ip = strings.TrimSpace(c.kubectl("get", "pod", "-n", p.ns, p.name, "-o", "jsonpath={.status.podIP}"))
	}
	for _, s := range []string{"one", "two"} {
		r.vips[s] = strings.TrimSpace(c.kubectl("get", "svc", "-n", npA, s, "-o", "jsonpath={.spec.clusterIP}"))
	}
	dnsIP := strings.TrimSpace(c.kubectl("get", "svc", "-n", "kube-system", "kube-dns", "-o", "jsonpath={.spec.clusterIP}"))
	for _, w := range pc.workers {
		natRulesFor(t, w, r.vips["one"], r.vips["two"], dnsIP)
	}
	return r
}

// networkPolicy is the manifest of a NetworkPolicy: its name and namespace, and its spec (the
// lines under spec:, indented).
func networkPolicy(ns, name, spec string) string {
	return fmt.Sprintf("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: %s, namespace: %s}\nspec:\n%s---\n", name, ns, spec)
}

// The policies' specs, each step's own.
const (
	npDenyIngressA = `  podSelector: {}
  policyTypes: [Ingress]
`
	npAllowTrustedNamespaces = `  podSelector: {matchLabels: {app: srv}}
  ingress:
  - from: [{namespaceSelector: {matchLabels: {team: trusted}}}]
`
	// A pod label in the policy's namespace, or in a trusted namespace (both selectors in one peer).
	npAllowFront = `  podSelector: {matchLabels: {app: srv}}
  ingress:
  - from:
    - podSelector: {matchLabels: {role: front}}
    - namespaceSelector: {matchLabels: {team: trusted}}
      podSelector: {matchLabels: {role: front}}
`
	// Every pod of every namespace, on the ports named http and spare of the destination pod.
	npAllowNamedPorts = `  podSelector: {matchLabels: {app: srv}}
  ingress:
  - from: [{namespaceSelector: {}}]
    ports: [{port: http}, {port: spare}]
`
	// npAllowIPBlock is a format: worker-3's pod CIDR, except one address of it.
	npAllowIPBlock = `  podSelector: {matchLabels: {app: srv}}
  ingress:
  - from: [{ipBlock: {cidr: %s, except: [%s/32]}}]
`
	// Only srv1 (Service one's backend) admits front, on its target port: the Service port (80)
	// is never what the rule names, so only a judgement after DNAT lets it through.
	npAllowFrontToOne = `  podSelector: {matchLabels: {inst: one}}
  ingress:
  - from: [{podSelector: {matchLabels: {role: front}}}]
    ports: [{protocol: TCP, port: 8080}]
`
	// Default deny egress in B (deny-egress), DNS (UDP and TCP 53, to anywhere) allowed
	// (allow-dns), and B's front pods allowed to srv2's port 8081 (allow-front-to-two).
	npDenyEgress = `  podSelector: {}
  policyTypes: [Egress]
`
	npAllowDNS = `  podSelector: {}
  policyTypes: [Egress]
  egress:
  - ports: [{protocol: UDP, port: 53}, {protocol: TCP, port: 53}]
`
	npAllowFrontToTwo = `  podSelector: {matchLabels: {role: front}}
  policyTypes: [Egress]
  egress:
  - to:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: netpol-a}}
      podSelector: {matchLabels: {inst: two}}
    ports: [{protocol: TCP, port: 8081}]
`
)

// TestNetworkPolicy is issue 25's e2e test of NetworkPolicy enforcement (see the top of the file
// for how a drop is proven). One cluster, steps in order, each building on the last; a failed step
// ends the test (what follows would judge a state it did not set up).
func TestNetworkPolicy(t *testing.T) {
	r := newNetpolRig(t)
	svcOne := "one." + npA + ".svc.cluster.local"
	// open is what every pair does with no policy at all: the control for every drop below.
	open := []conn{
		tcp("front", "srv1", 8080, passes), tcp("front", "srv2", 8080, passes), tcp("other", "srv1", 8081, passes),
		tcp("b1", "srv1", 8080, passes), tcp("b2", "srv2", 8080, passes), tcp("b2", "srv2", 8081, passes),
		tcp("b1", "front", 8080, passes), tcp("b2", "b1", 8080, passes), tcp("srv1", "b1", 8080, passes),
		tcp("front", "srv1", 9, refused), tcp("other", "srv1", 8082, refused),
		udp("b1", "srv1", 53, passes), udp("b1", "srv1", 5353, refused), udp("b2", "srv2", 53, refused),
		tcp("front", "srv1", 80, passes).via(r.vips["one"]), tcp("front", "srv2", 80, passes).via(r.vips["two"]),
		tcp("b1", "srv1", 80, passes).via(svcOne),
	}
	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"open before any policy", func(t *testing.T) { r.expect(t, open...) }},
		{"default deny ingress in A", func(t *testing.T) {
			r.apply(t, networkPolicy(npA, "deny-ingress", npDenyIngressA))
			r.expect(t,
				tcp("front", "srv1", 8080, droppedIn), tcp("front", "srv2", 8080, droppedIn), tcp("other", "srv1", 8081, droppedIn),
				tcp("b1", "srv1", 8080, droppedIn), tcp("b2", "srv2", 8080, droppedIn), tcp("b1", "front", 8080, droppedIn),
				// A port nothing listens on times out now: the filter, not the pod, answers.
				tcp("front", "srv1", 9, droppedIn),
				tcp("front", "srv2", 80, droppedIn).via(r.vips["two"]),
				// A's egress stays open, and the replies to its isolated pods pass; B is untouched.
				tcp("srv1", "b1", 8080, passes), tcp("b2", "b1", 8080, passes))
			r.nodeReaches(t, "srv1", "srv2", "front", "other")
		}},
		{"allow from a labelled namespace", func(t *testing.T) {
			r.apply(t, networkPolicy(npA, "allow-trusted-namespaces", npAllowTrustedNamespaces))
			r.expect(t, tcp("b1", "srv1", 8080, droppedIn), tcp("b2", "srv2", 8080, droppedIn))
			r.kubectl(t, "label", "namespace", npB, "team=trusted")
			r.expect(t,
				tcp("b1", "srv1", 8080, passes), tcp("b2", "srv2", 8080, passes), tcp("b1", "srv1", 8081, passes),
				udp("b1", "srv1", 53, passes),
				// A's own namespace is not trusted, and the policy does not select front.
				tcp("front", "srv1", 8080, droppedIn), tcp("other", "srv2", 8080, droppedIn), tcp("b1", "front", 8080, droppedIn))
			r.kubectl(t, "delete", "networkpolicy", "-n", npA, "allow-trusted-namespaces")
		}},
		{"allow by pod label", func(t *testing.T) {
			r.apply(t, networkPolicy(npA, "allow-front", npAllowFront))
			r.expect(t,
				tcp("front", "srv1", 8080, passes), tcp("front", "srv2", 8080, passes), tcp("b2", "srv2", 8081, passes),
				tcp("other", "srv1", 8080, droppedIn), tcp("b1", "srv1", 8080, droppedIn), tcp("b1", "front", 8080, droppedIn))
			r.kubectl(t, "delete", "networkpolicy", "-n", npA, "allow-front")
		}},
		{"allow by named port", func(t *testing.T) {
			r.apply(t, networkPolicy(npA, "allow-named-ports", npAllowNamedPorts))
			r.expect(t,
				// "http" is 8080 on srv1 and 8081 on srv2, each resolved on its own pod.
				tcp("other", "srv1", 8080, passes), tcp("other", "srv1", 8081, droppedIn),
				tcp("front", "srv2", 8081, passes), tcp("front", "srv2", 8080, droppedIn),
				tcp("b1", "srv1", 8080, passes), tcp("b2", "srv2", 8080, droppedIn),
				// "spare" has no listener: refused, so the packet reached the pod.
				tcp("other", "srv1", 8082, refused), tcp("b2", "srv2", 8082, refused),
				tcp("front", "srv1", 9, droppedIn))
			r.kubectl(t, "delete", "networkpolicy", "-n", npA, "allow-named-ports")
		}},
		{"allow by ipBlock with except", func(t *testing.T) {
			cidr := r.pc.podCIDR(t, r.pc.workers[2].name)
			r.apply(t, networkPolicy(npA, "allow-ipblock", fmt.Sprintf(npAllowIPBlock, cidr, r.pods["other"].ip)))
			r.expect(t,
				tcp("b2", "srv1", 8080, passes), tcp("b2", "srv2", 8081, passes),
				// other is on worker-3 too, but excepted; front and b1 are outside the block.
				tcp("other", "srv1", 8080, droppedIn), tcp("other", "srv2", 8080, droppedIn),
				tcp("front", "srv1", 8080, droppedIn), tcp("b1", "srv1", 8080, droppedIn))
			r.kubectl(t, "delete", "networkpolicy", "-n", npA, "allow-ipblock")
		}},
		{"a Service to an allowed and to a denied backend", func(t *testing.T) {
			r.apply(t, networkPolicy(npA, "allow-front-to-one", npAllowFrontToOne))
			r.expect(t,
				tcp("front", "srv1", 80, passes).via(r.vips["one"]), tcp("front", "srv1", 80, passes).via(svcOne),
				tcp("front", "srv2", 80, droppedIn).via(r.vips["two"]),
				tcp("other", "srv1", 80, droppedIn).via(r.vips["one"]), tcp("front", "srv1", 8081, droppedIn))
		}},
		{"pods stay ready under default deny", func(t *testing.T) {
			// Readiness probes (every second, three failures) come from the node: the pods have
			// been isolated far longer than three periods.
			r.nodeReaches(t, "srv1", "srv2", "front", "other")
			out := r.kubectl(t, "get", "pods", "-n", npA, "-o",
				`jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status} {.status.containerStatuses[0].restartCount}{"\n"}{end}`)
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				if f := strings.Fields(l); len(f) != 3 || f[1] != "True" || f[2] != "0" {
					t.Errorf("pod (name ready restarts) %q, want Ready and never restarted", l)
				}
			}
		}},
		{"A open again once its policies are deleted", func(t *testing.T) {
			r.kubectl(t, "delete", "networkpolicy", "-n", npA, "--all")
			r.expect(t, open...)
		}},
		{"egress default deny in B with DNS allowed", func(t *testing.T) {
			r.apply(t, networkPolicy(npB, "deny-egress", npDenyEgress)+networkPolicy(npB, "allow-dns", npAllowDNS)+
				networkPolicy(npB, "allow-front-to-two", npAllowFrontToTwo))
			r.expect(t,
				// The Service name resolves (a failed lookup is an error, not a timeout), and the
				// connection to it is dropped on the way out. The pod's resolver is its node (the
				// kube-dns Service's endpoint on every node), which policy never judges; allow-dns's
				// own port rule is proven on pods: UDP 53 passes (and reaches srv2, which refuses),
				// UDP 5353, refused before, is dropped.
				tcp("b1", "srv1", 80, droppedOut).via(svcOne),
				udp("b1", "srv1", 53, passes), udp("b2", "srv2", 53, refused), udp("b1", "srv1", 5353, droppedOut),
				tcp("b1", "srv1", 8080, droppedOut), tcp("b1", "front", 8080, droppedOut), tcp("b2", "b1", 8080, droppedOut),
				tcp("b2", "srv2", 8081, passes), tcp("b2", "srv2", 8080, droppedOut), tcp("b2", "srv1", 8081, droppedOut),
				// B's ingress is open, and replies leave its egress-isolated pods.
				tcp("front", "b1", 8080, passes), tcp("srv1", "b1", 8080, passes))
			out := r.kubectl(t, "exec", "-n", npB, "b1", "--", "nslookup", svcOne)
			mustContain(t, out, r.vips["one"])
		}},
		{"B open again once its policies are deleted", func(t *testing.T) {
			r.kubectl(t, "delete", "networkpolicy", "-n", npB, "--all")
			r.expect(t, open...)
		}},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.run) {
			r.pc.c.dumpState()
			for _, w := range r.pc.workers {
				out, _ := w.host.Command("nft", "list", "table", "ip", netpol.Table(proxy.NodePrefix(w.dataDir))).CombinedOutput()
				t.Logf("%s's policy table:\n%s\n%s's log (end):\n%s", w.name, out, w.name, w.log())
			}
			t.FailNow()
		}
	}
}
