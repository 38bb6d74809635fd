package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// upgradeFromCommit is the skiff the rolling-upgrade test starts on: main when issue 30 was filed.
const upgradeFromCommit = "a9e4bae"

// upgradeControlPlanes is how many stacked control planes the rolling-upgrade test runs: three,
// so that one restarting leaves etcd its quorum and the API two servers.
const upgradeControlPlanes = 3

// skiffAtCommit builds the skiff of commit from this checkout's git repository (a worktree in a
// temporary dir) and caches it under ~/.cache/skiff-e2e/<commit>/skiff, so later runs reuse it. It
// skips the test when git or the commit is missing.
func skiffAtCommit(t *testing.T, commit string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("git is not on PATH: cannot build the skiff of commit %s to upgrade from", commit)
	}
	full, err := exec.Command("git", "rev-parse", "--verify", "--quiet", commit+"^{commit}").Output()
	if err != nil {
		t.Skipf("commit %s is not in this checkout's git repository (a shallow clone?): cannot build the skiff to upgrade from", commit)
	}
	sha := strings.TrimSpace(string(full))
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(home, ".cache", "skiff-e2e", sha, "skiff")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(t.TempDir(), "src")
	if out, err := exec.Command("git", "worktree", "add", "--detach", tree, sha).CombinedOutput(); err != nil {
		t.Fatalf("git worktree add %s: %v\n%s", sha, err, out)
	}
	defer func() { _ = exec.Command("git", "worktree", "remove", "--force", tree).Run() }()
	began := time.Now()
	build := exec.Command("go", "build", "-o", bin+".tmp", "./cmd/skiff")
	build.Dir = tree
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build skiff at %s: %v\n%s", sha, err, out)
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("figure: built the skiff of %s in %s (cached as %s)", commit, time.Since(began).Round(time.Second), bin)
	return bin
}

// skiffWithMinor builds this tree's skiff claiming Kubernetes minor version minor: a deliberately
// too-old (or too-new) binary for the skew policy to refuse.
func skiffWithMinor(t *testing.T, minor int) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "skiff-minor-"+strconv.Itoa(minor))
	build := exec.Command("go", "build", "-o", bin, "-ldflags",
		"-X github.com/skiff-sh/skiff/internal/version.Minor="+strconv.Itoa(minor), "github.com/skiff-sh/skiff/cmd/skiff")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build skiff with minor %d: %v\n%s", minor, err, out)
	}
	return bin
}

// upgradeWeb is the served application: busybox httpd pods behind a Service, each answering with
// its pod's name and node (the downward API). upgradeClient requests it every 50 ms through the
// Service's cluster IP (clientLoop).
const upgradeWeb = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: httpd
        image: localhost/busybox:local
        command: [sh, -c, 'mkdir -p /www && echo "$POD_NAME $NODE_NAME" > /www/index.html && exec httpd -f -p 8080 -h /www']
        env:
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`

const upgradeClient = `apiVersion: apps/v1
kind: Deployment
metadata: {name: client}
spec:
  replicas: 1
  selector: {matchLabels: {app: client}}
  template:
    metadata: {labels: {app: client}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: localhost/busybox:local
        command: [sh, -c, '` + clientLoop + `']
`

// clientLoop is the client pods' shell loop: a request every 50 ms through the web Service's
// cluster IP, a line per request, "ok <unix seconds> <pod> <node>" or "fail <unix seconds> rc=<exit
// status> <wget's message>", the seconds those of the request's start (so a failure is attributed
// to when it began) and rc=124 a timeout. The limit is 5 s under timeout (busybox 1.35's wget
// crashes with -T): a request on this machine takes milliseconds, and a CI run's race-detector
// tests beside the cluster have starved one for over 2 s. The loop starts once the Service has
// answered: before that the web pods may not be ready, or the worker's proxy may not yet have
// the Service's rules (a CI run once saw one request time out there, before a CA rotation began),
// and neither is what the tests measure.
const clientLoop = `until timeout 5 wget -q -O /dev/null http://$WEB_SERVICE_HOST:$WEB_SERVICE_PORT/ 2>/dev/null; do sleep 0.2; done; while :; do t=$(date +%s); if a=$(timeout 5 wget -q -O - http://$WEB_SERVICE_HOST:$WEB_SERVICE_PORT/ 2>&1); then echo ok $t $a; else echo fail $t rc=$? $a; fi; sleep 0.05; done`

// httpTally keeps the longest log seen of each client pod: a pod's log goes with the pod, so it is
// read before the pod's node is drained and again at the end.
type httpTally struct {
	mu   sync.Mutex
	logs map[string]string
}

func (h *httpTally) collect(c *cluster) error {
	pods, err := podsOf(c, "client")
	if err != nil {
		return err
	}
	var errs []string
	for _, p := range pods {
		out, err := c.kubectlErr("logs", p[1], "--request-timeout=20s")
		if err != nil {
			errs = append(errs, fmt.Sprintf("logs of %s: %v: %s", p[1], err, out))
			continue
		}
		h.mu.Lock()
		if len(out) > len(h.logs[p[1]]) {
			h.logs[p[1]] = out
		}
		h.mu.Unlock()
	}
	if len(errs) > 0 {
		return errString(strings.Join(errs, "\n"))
	}
	return nil
}

// httpRequest is one line of a client pod's log: when, and which pod on which node answered
// (none for a failed request), or why it failed.
type httpRequest struct {
	client    string
	at        time.Time
	ok        bool
	pod, node string
	why       string
}

// requests parses every client pod's log.
func (h *httpTally) requests() []httpRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	var reqs []httpRequest
	for client, l := range h.logs {
		for _, line := range strings.Split(l, "\n") {
			f := strings.Fields(line)
			if len(f) < 2 || (f[0] != "ok" && f[0] != "fail") {
				continue
			}
			sec, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				continue
			}
			r := httpRequest{client: client, at: time.Unix(sec, 0), ok: f[0] == "ok"}
			switch {
			case r.ok && len(f) >= 4:
				r.pod, r.node = f[2], f[3]
			case !r.ok:
				r.why = strings.Join(f[2:], " ")
			}
			reqs = append(reqs, r)
		}
	}
	return reqs
}

// checkAllAnswered fails the test unless the client pods' requests were answered, every one, and
// names each failed request's time and what wget said.
func (h *httpTally) checkAllAnswered(t *testing.T) {
	t.Helper()
	ok, failed := h.counts()
	if ok > 0 && failed == 0 {
		return
	}
	var why []string
	for _, r := range h.requests() {
		if !r.ok {
			why = append(why, fmt.Sprintf("%s at %s: %s", r.client, r.at.Format(time.TimeOnly), r.why))
		}
	}
	t.Errorf("pod traffic through the Service: %d ok, %d failed\n%s", ok, failed, strings.Join(why, "\n"))
}

func (h *httpTally) counts() (ok, failed int) {
	for _, r := range h.requests() {
		if r.ok {
			ok++
		} else {
			failed++
		}
	}
	return ok, failed
}

// upgradeStep is one node's upgrade as the test saw it: for a worker, began is when kubectl drain
// started and drained when it returned (its pods evicted and deleted); pods are the web and client
// pods the node ran when its drain began.
type upgradeStep struct {
	node                 string
	worker               bool
	began, drained, done time.Time
	pods                 []string
}

// failureCause attributes a failed request at at (whole seconds, as the client's date prints
// them) to the upgrade steps: it is expected when it falls while a drained worker's own pods (the
// web pods behind the Service, or the client itself) were being evicted, from the drain's start
// to the second after it returned; any other failure is named by what was happening instead.
func failureCause(at time.Time, steps []upgradeStep) (expected bool, cause string) {
	for _, s := range steps {
		from, to := s.began.Truncate(time.Second), s.done.Add(time.Second)
		if at.Before(from) || at.After(to) {
			continue
		}
		if !s.worker {
			return false, "while control plane " + s.node + " restarted"
		}
		if len(s.pods) > 0 && !at.After(s.drained.Add(time.Second)) {
			return true, "while " + s.node + "'s own pods were evicted (" + strings.Join(s.pods, ", ") + ")"
		}
		if len(s.pods) == 0 && !at.After(s.drained.Add(time.Second)) {
			return false, "while " + s.node + ", which ran none of the web or client pods, was drained"
		}
		return false, "after " + s.node + " was drained, while it restarted on the new binary"
	}
	return false, "outside any node's upgrade"
}

// podRecord is a pod's identity and restarts, to see that an upgrade left it alone.
type podRecord struct{ node, uid, restarts string }

func podRecords(t *testing.T, c *cluster) map[string]podRecord {
	t.Helper()
	out := c.kubectl("get", "pods", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.metadata.uid} {.status.containerStatuses[*].restartCount}{"\n"}{end}`)
	pods := map[string]podRecord{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 {
			pods[f[0]] = podRecord{node: f[1], uid: f[2], restarts: strings.Join(f[3:], ",")}
		}
	}
	return pods
}

// checkUntouched fails when a pod of before that was not on drained is gone or restarted.
func checkUntouched(t *testing.T, c *cluster, before map[string]podRecord, drained string) {
	t.Helper()
	after := podRecords(t, c)
	for name, b := range before {
		if b.node == drained || b.node == "" {
			continue
		}
		a, ok := after[name]
		if !ok || a.uid != b.uid || a.restarts != b.restarts {
			t.Errorf("pod %s on %s changed while %s was upgraded: before %+v, after %+v (present %v)", name, b.node, orNone(drained), b, a, ok)
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "a control plane"
	}
	return s
}

// configMapWatch is an informer on default's ConfigMaps through one API server, recording every
// name it saw added.
func configMapWatch(t *testing.T, c *cluster) (seen func(string) bool, stop func()) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	names := map[string]bool{}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"))
	inf := factory.Core().V1().ConfigMaps().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			mu.Lock()
			names[cm.Name] = true
			mu.Unlock()
		}
	}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	return func(n string) bool { mu.Lock(); defer mu.Unlock(); return names[n] }, func() { cancel(); factory.Shutdown() }
}

// frontDoor is a kubeconfig the test points at one serving control plane at a time, as a load
// balancer in front of the API servers would be: the writer and the test's own kubectl go through
// it, so that with three control planes a restarting one takes no request of theirs.
type frontDoor struct {
	api *cluster
}

func newFrontDoor(t *testing.T) *frontDoor {
	dir := t.TempDir()
	return &frontDoor{api: &cluster{t: t, dataDir: dir, kubeconfig: filepath.Join(dir, "front.kubeconfig")}}
}

// pointAt makes the next kubectl through the front door reach c (a rename: a kubectl reading the
// file sees the old one or the new one whole).
func (f *frontDoor) pointAt(c *cluster) {
	f.api.t.Helper()
	data, err := os.ReadFile(c.kubeconfig)
	if err != nil {
		f.api.t.Fatal(err)
	}
	tmp := f.api.kubeconfig + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		f.api.t.Fatal(err)
	}
	if err := os.Rename(tmp, f.api.kubeconfig); err != nil {
		f.api.t.Fatal(err)
	}
}

// waitEtcdMembers waits until c reports members healthy voting etcd members with quorum.
func waitEtcdMembers(t *testing.T, c *cluster, members int) {
	t.Helper()
	eventually(t, 2*time.Minute, func() error {
		r, err := haStatus(t, c)
		if err != nil {
			return err
		}
		if r.Etcd == nil || len(r.Etcd.Members) != members || !r.Etcd.Quorum {
			return fmt.Errorf("want %d members with quorum: %+v %s", members, r.Etcd, r.EtcdError)
		}
		for _, m := range r.Etcd.Members {
			if m.IsLearner || !m.Healthy {
				return fmt.Errorf("member %s is not a healthy voter", m.Name)
			}
		}
		return nil
	})
}

// TestRollingUpgrade is issue 30's upgrade: a cluster started on the skiff of upgradeFromCommit,
// upgraded one node at a time to this tree's, while a writer records every acknowledged write, an
// informer watches, and a client pod requests a Service every 50 ms. Control planes go first, one
// at a time (stopped, started on the new binary over the same data dir, serving and their etcd
// member a healthy voter again), then each worker (drained with kubectl drain, stopped, started,
// Ready, uncordoned). At the end every acknowledged write reads back and was seen by the
// informer; every failed request is attributed, and one that was not during the eviction of the
// drained node's own pods fails the test; no pod restarted that was not on the drained node. Then
// a binary claiming an older minor is refused on an upgraded data dir, naming both versions and
// the rule, and leaves the data dir as it was.
//
// The cluster is the issue's: upgradeControlPlanes stacked control planes and two workers. The
// writer goes through a front door pointed away from the restarting control plane, so no write
// may fail.
func TestRollingUpgrade(t *testing.T) {
	testBegan := time.Now()
	defer func() { t.Logf("figure: TestRollingUpgrade took %s", time.Since(testBegan).Round(time.Second)) }()
	oldBin := skiffAtCommit(t, upgradeFromCommit)
	tooOld := skiffWithMinor(t, 31)

	n := newTestNet(t)
	ports := [3]int{freePort(t), freePort(t), freePort(t)}
	grace := []string{"--node-monitor-grace-period=40s"}
	cp1 := haControlPlaneOn(t, oldBin, n, nil, "cp-1", ports, "", "", grace...)
	if v := cp1.kubectl("version", "-o", "json"); !strings.Contains(v, "v1.33.0+skiff") {
		t.Fatalf("old cluster's version: %s", v)
	}
	workerToken := cp1.createToken()
	cps, cpNames := []*cluster{cp1}, []string{"cp-1"}
	cpHosts, cpAddrs := []*netHost{nil}, []string{n.HostIP()}
	token := cp1.createToken("--control-plane", "--ttl", "1h")
	for i := 2; i <= upgradeControlPlanes; i++ {
		h := n.addHost()
		name := fmt.Sprintf("cp-%d", i)
		began := time.Now()
		cps = append(cps, haControlPlaneOn(t, oldBin, n, h, name, ports, cp1.ServerURL(n), token, grace...))
		cpNames, cpHosts, cpAddrs = append(cpNames, name), append(cpHosts, h), append(cpAddrs, h.IP)
		t.Logf("figure: stacked control plane %s (old binary) join to serving: %s", name, time.Since(began).Round(100*time.Millisecond))
	}
	waitEtcdMembers(t, cp1, upgradeControlPlanes)
	front := newFrontDoor(t)
	front.pointAt(cps[len(cps)-1])
	api := front.api

	var workers []*joinedNode
	for i := range 2 {
		w := newJoinedNode(t, n.addHost(), fmt.Sprintf("worker-%d", i+1), cp1.ServerURL(n))
		w.bin = oldBin
		t.Cleanup(func() { reapKilledWorker(t, w.dataDir) })
		w.start(workerToken)
		t.Cleanup(w.stop)
		workers = append(workers, w)
	}
	t.Cleanup(func() {
		_, _ = api.kubectlErr("delete", "deployment", "--all", "--timeout=30s")
		_, _ = api.kubectlErr("delete", "pods", "--all", "--grace-period=1", "--timeout=60s")
	})
	waitNodesReady(t, api, 3*time.Minute, "worker-1", "worker-2")
	importBusybox(t, api, workers...)
	for _, d := range []struct{ name, manifest string }{{"web", upgradeWeb}, {"client", upgradeClient}} {
		api.stdin(d.manifest, "apply", "-f", "-")
		eventually(t, 3*time.Minute, func() error {
			if out, err := api.kubectlErr("rollout", "status", "deployment/"+d.name, "--timeout=2s"); err != nil {
				return errString(out)
			}
			return nil
		})
	}
	tally := &httpTally{logs: map[string]string{}}
	eventually(t, time.Minute, func() error {
		err := tally.collect(api)
		if ok, failed := tally.counts(); ok < 10 {
			return fmt.Errorf("client: %d requests answered, %d failed (%v)", ok, failed, err)
		}
		return nil
	})
	seen, stopWatch := configMapWatch(t, cp1)
	defer stopWatch()
	writes := startWriteRecorder(t, "upg", api)
	writes.waitForMore(t, 3, time.Minute)
	upgradeBegan := time.Now()
	var steps []upgradeStep

	// Control planes first, one at a time.
	for i, c := range cps {
		// Away from the control plane about to stop; two writes acknowledged after the switch mean
		// the writer's next kubectl reads the new file.
		front.pointAt(cps[(i+1)%len(cps)])
		writes.waitForMore(t, 2, time.Minute)
		before := podRecords(t, api)
		began := time.Now()
		c.stop()
		c.bin = skiffBinary
		c.extraArgs = withoutToken(c.extraArgs)
		if cpHosts[i] == nil {
			c.start()
		} else {
			startInNamespace(c, cpHosts[i], cpAddrs[i])
		}
		serving := time.Since(began)
		waitEtcdMembers(t, c, len(cps))
		steps = append(steps, upgradeStep{node: cpNames[i], began: began, done: time.Now()})
		t.Logf("figure: control plane %s restarted on the new binary: serving in %s, its etcd member a healthy voter in %s",
			cpNames[i], serving.Round(100*time.Millisecond), time.Since(began).Round(100*time.Millisecond))
		writes.waitForMore(t, 3, time.Minute)
		checkUntouched(t, api, before, "")
	}
	// Then the workers: drain, stop, start on the new binary, Ready, uncordon.
	for _, w := range workers {
		if err := tally.collect(api); err != nil {
			t.Logf("client logs before draining %s: %v", w.name, err)
		}
		before := podRecords(t, api)
		step := upgradeStep{node: w.name, worker: true, began: time.Now()}
		for name, p := range before {
			if p.node == w.name && (strings.HasPrefix(name, "web-") || strings.HasPrefix(name, "client-")) {
				step.pods = append(step.pods, name)
			}
		}
		if out, err := api.kubectlErr("drain", w.name, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=2m"); err != nil {
			t.Fatalf("kubectl drain %s: %v\n%s", w.name, err, out)
		}
		step.drained = time.Now()
		t.Logf("figure: kubectl drain %s took %s", w.name, step.drained.Sub(step.began).Round(100*time.Millisecond))
		w.stop()
		w.bin = skiffBinary
		w.start("")
		waitNodesReady(t, api, 2*time.Minute, w.name)
		api.kubectl("uncordon", w.name)
		t.Logf("figure: worker %s drained, upgraded, Ready and uncordoned in %s", w.name, time.Since(step.began).Round(100*time.Millisecond))
		for _, d := range []string{"web", "client"} {
			eventually(t, 2*time.Minute, func() error {
				if out, err := api.kubectlErr("rollout", "status", "deployment/"+d, "--timeout=2s"); err != nil {
					return errString(out)
				}
				return nil
			})
		}
		step.done = time.Now()
		steps = append(steps, step)
		checkUntouched(t, api, before, w.name)
	}
	t.Logf("figure: whole upgrade (%d control planes, 2 workers) took %s", len(cps), time.Since(upgradeBegan).Round(time.Second))
	writes.waitForMore(t, 3, time.Minute)
	eventually(t, time.Minute, func() error { return tally.collect(api) })
	acked, window := writes.stopAndCheck(t, api, "the rolling upgrade", upgradeBegan)
	if window > 0 {
		t.Errorf("writes through a serving control plane failed for %s during the upgrade", window.Round(100*time.Millisecond))
	}
	eventually(t, time.Minute, func() error {
		writes.mu.Lock()
		defer writes.mu.Unlock()
		for _, name := range writes.acked {
			if !seen(name) {
				return fmt.Errorf("informer never saw acknowledged write %s", name)
			}
		}
		return nil
	})
	reportRequests(t, tally.requests(), steps)
	t.Logf("figure: across the upgrade, %d acknowledged writes all read back and seen by the informer (failed-write window %s)",
		acked, window.Round(100*time.Millisecond))
	for _, w := range workers {
		if v := api.kubectl("get", "node", w.name, "-o", "jsonpath={.status.nodeInfo.kubeletVersion}"); v != "v1.33.0+skiff" {
			t.Errorf("%s's kubelet version %q after the upgrade", w.name, v)
		}
	}

	// A deliberately too-old binary on an upgraded data dir: refused, naming both versions and the
	// rule, before it changes anything.
	w := workers[0]
	record := filepath.Join(w.dataDir, "version.json")
	was, err := os.ReadFile(record)
	if err != nil {
		t.Fatalf("the upgraded worker's data dir has no version record: %v", err)
	}
	w.stop()
	w.bin = tooOld
	out := w.joinRefused("")
	for _, want := range []string{"v1.31.0+skiff", "v1.33.0+skiff", "never downgraded"} {
		if !strings.Contains(out, want) {
			t.Errorf("too-old binary's refusal does not say %q:\n%s", want, out)
		}
	}
	t.Logf("too-old binary refused: %s", lastLine(out))
	if now, _ := os.ReadFile(record); string(now) != string(was) {
		t.Errorf("the refused binary changed the data dir's record: %s -> %s", was, now)
	}
	w.bin = skiffBinary
	w.start("")
	waitNodesReady(t, api, 2*time.Minute, w.name)
}

// reportRequests logs the client's requests (answered, by the node of the pod that answered, and
// failed, by cause) and fails the test for a failure that was not during the eviction of the
// drained node's own pods.
func reportRequests(t *testing.T, reqs []httpRequest, steps []upgradeStep) {
	t.Helper()
	answeredBy := map[string]int{}
	causes := map[string]int{}
	var ok, failed, unexpected int
	for _, r := range reqs {
		if r.ok {
			ok++
			answeredBy[r.node]++
			continue
		}
		failed++
		expected, cause := failureCause(r.at, steps)
		if !expected {
			unexpected++
			cause = "UNEXPECTED " + cause
			t.Logf("failed request of %s at %s (%s): %s", r.client, r.at.Format(time.TimeOnly), r.why, cause)
		}
		causes[cause]++
	}
	t.Logf("figure: client HTTP requests: %d answered (by node: %v), %d failed (by cause: %v)", ok, answeredBy, failed, causes)
	if unexpected > 0 {
		t.Errorf("%d failed requests were not during the eviction of the drained node's own pods", unexpected)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
