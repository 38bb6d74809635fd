package e2e

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-sh/skiff/internal/pki"
)

// caRotationWeb is busybox httpd behind a Service and a client pod requesting it every 50 ms
// (upgradeClient's loop), all on the worker: the pods a CA rotation must leave running.
const caRotationWeb = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {kubernetes.io/hostname: worker-1}
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
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: client}
spec:
  replicas: 1
  selector: {matchLabels: {app: client}}
  template:
    metadata: {labels: {app: client}}
    spec:
      nodeSelector: {kubernetes.io/hostname: worker-1}
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: localhost/busybox:local
        command: [sh, -c, '` + clientLoop + `']
`

// TestCARotation rotates the cluster CA of a control plane and a joined worker with `skiff
// certificate rotate-ca` (trust, sign, retire) under continuous traffic: a request every 100 ms
// with the admin kubeconfig as it is on disk, each on a new connection; a watch held open; logs
// and exec through the worker's kubelet every 2 s; a pod on the worker requesting a Service every
// 50 ms. No request may fail, the worker stays Ready, no pod restarts; a worker joined after the
// trust phase with a token made before it joins; at the end every certificate of both nodes
// chains to the new CA and none to the old.
func TestCARotation(t *testing.T) {
	rc := startCARotationCluster(t, "")
	n, c, others, w, token := rc.net, rc.c, rc.others, rc.worker, rc.token
	pods := podRecords(t, c)
	oldCA := firstCA(t, filepath.Join(c.dataDir, "pki", "ca.crt"))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	traffic := startCATraffic(ctx, c)

	rotate := func(phase string) {
		t.Helper()
		out, err := execOutput(skiffBinary, "certificate", "rotate-ca", "--data-dir", c.dataDir, "--phase", phase)
		if err != nil {
			t.Fatalf("rotate-ca --phase %s: %v\n%s", phase, err, out)
		}
		t.Logf("rotate-ca --phase %s:\n%s", phase, out)
		// The other control planes follow within seconds: the same CA files.
		want := readFile(t, filepath.Join(c.dataDir, "pki", "ca.crt"))
		for _, o := range others {
			eventually(t, 60*time.Second, func() error {
				if got := readFile(t, filepath.Join(o.dataDir, "pki", "ca.crt")); got != want {
					return fmt.Errorf("%s's ca.crt differs from the rotating node's after %s\n%s", o.dataDir, phase, o.log())
				}
				return nil
			})
		}
	}
	workerCAs := func() []*x509.Certificate {
		data, err := os.ReadFile(filepath.Join(w.dataDir, "pki", "ca.crt"))
		if err != nil {
			return nil
		}
		certs, _ := pki.ParseCertificates(data)
		return certs
	}
	time.Sleep(15 * time.Second)

	// Phase trust: the worker takes the bundle within its certificate tick.
	rotate("trust")
	eventually(t, 150*time.Second, func() error {
		if got := len(workerCAs()); got != 2 {
			return fmt.Errorf("worker's ca.crt holds %d CAs, want 2\n%s", got, w.log())
		}
		return nil
	})
	// A join after the trust phase with the token made before it: the token pins the old CA,
	// which still signs.
	w2 := newJoinedNode(t, n.addHost(), "worker-2", c.ServerURL(n))
	t.Cleanup(func() { reapKilledWorker(t, w2.dataDir) })
	w2.start(token)
	t.Cleanup(w2.stop)
	waitNodeReady(t, c, w2)
	time.Sleep(10 * time.Second)

	// Phase sign: the new CA signs; the workers re-issue their certificates through CSRs.
	rotate("sign")
	newCA := firstCA(t, filepath.Join(c.dataDir, "pki", "ca.crt"))
	if newCA.Equal(oldCA) {
		t.Fatal("after sign the first CA of ca.crt is still the old one")
	}
	for _, node := range []*joinedNode{w, w2} {
		eventually(t, 150*time.Second, func() error {
			return chainsOnlyTo(filepath.Join(node.dataDir, "pki"), newCA, oldCA)
		})
	}
	for _, o := range others {
		if err := chainsOnlyTo(filepath.Join(o.dataDir, "pki"), newCA, oldCA); err != nil {
			t.Fatalf("a control plane that followed sign: %v", err)
		}
	}
	time.Sleep(10 * time.Second)

	// Phase retire: the old CA is refused from now on.
	var retireMarks []int
	for _, cp := range append([]*cluster{c}, others...) {
		retireMarks = append(retireMarks, len(cp.logAll()))
	}
	rotate("retire")
	for _, node := range []*joinedNode{w, w2} {
		eventually(t, 150*time.Second, func() error {
			data, err := os.ReadFile(filepath.Join(node.dataDir, "pki", "ca.crt"))
			if err != nil {
				return err
			}
			if certs, err := pki.ParseCertificates(data); err != nil || len(certs) != 1 || !certs[0].Equal(newCA) {
				return fmt.Errorf("%s's ca.crt is not the new CA alone (%d certificates, err %v)", node.name, len(certs), err)
			}
			return nil
		})
	}
	time.Sleep(20 * time.Second)
	// Every control plane's components (the controller manager and scheduler call their API
	// server in process) authenticate with their re-issued certificates: once the old CA is
	// retired, nothing of theirs is refused.
	for i, cp := range append([]*cluster{c}, others...) {
		if after := cp.logAll()[retireMarks[i]:]; strings.Contains(after, "Unauthorized") {
			t.Errorf("%s logged Unauthorized after the retire phase:\n%s", cp.dataDir, linesWith(after, "Unauthorized", 10))
		}
	}
	cancel()
	r := traffic.wait()
	if err := r.tally.collect(c); err != nil {
		t.Errorf("client pod logs: %v", err)
	}
	ok, failed := r.tally.counts()
	t.Logf("%d API requests (%d failed), %d logs+exec rounds, %d watch restarts, %d Ready checks; pod traffic: %d ok, %d failed",
		r.requests, r.failed, r.kubeletCalls, r.watchRestarts, r.readyChecks, ok, failed)
	if r.failed > 0 {
		t.Errorf("%d failed requests:\n%s", r.failed, strings.Join(r.failures, "\n"))
	}
	r.tally.checkAllAnswered(t)
	checkUntouched(t, c, pods, "")
	// Every certificate of the control plane and the workers chains to the new CA and none to
	// the old; the kubeconfig trusts only the new one.
	dirs := []string{filepath.Join(c.dataDir, "pki"), filepath.Join(w.dataDir, "pki"), filepath.Join(w2.dataDir, "pki")}
	for _, o := range others {
		dirs = append(dirs, filepath.Join(o.dataDir, "pki"))
	}
	for _, dir := range dirs {
		if err := chainsOnlyTo(dir, newCA, oldCA); err != nil {
			t.Error(err)
		}
	}
	kc, err := clientcmd.LoadFromFile(c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for name, cl := range kc.Clusters {
		if certs, err := pki.ParseCertificates(cl.CertificateAuthorityData); err != nil || len(certs) != 1 || !certs[0].Equal(newCA) {
			t.Errorf("admin kubeconfig's cluster %q trusts %d CAs (err %v), want the new CA alone", name, len(certs), err)
		}
	}
	// Extension API servers read the client CA in kube-system/extension-apiserver-authentication:
	// it follows the rotation too.
	eventually(t, 30*time.Second, func() error {
		var cm struct {
			Data map[string]string `json:"data"`
		}
		out := c.kubectl("get", "configmap", "-n", "kube-system", "extension-apiserver-authentication", "-o", "json")
		if err := json.Unmarshal([]byte(out), &cm); err != nil {
			return err
		}
		if certs, err := pki.ParseCertificates([]byte(cm.Data["client-ca-file"])); err != nil || len(certs) != 1 || !certs[0].Equal(newCA) {
			return fmt.Errorf("extension-apiserver-authentication's client-ca-file holds %d CAs (err %v), want the new CA alone", len(certs), err)
		}
		return nil
	})
	if t.Failed() {
		t.Logf("control plane log:\n%s\nworker log:\n%s", c.log(), w.log())
	}
}

// caRotationCluster is what the CA rotation tests run on: three stacked control planes (the
// rotation runs on the first, the others follow it through the keys Secret) and worker-1 with
// caRotationWeb and a ticker pod running.
type caRotationCluster struct {
	net    *testNet
	c      *cluster
	others []*cluster
	worker *joinedNode
	// token is a worker join token made before any rotation.
	token string
}

// The third node has --roles thirdRoles ("": a stacked control plane like the other two).
func startCARotationCluster(t *testing.T, thirdRoles string) *caRotationCluster {
	t.Helper()
	n := newTestNet(t)
	c := newJoinCluster(t, n, true)
	cpToken := c.createToken("--control-plane", "--ttl", "1h")
	others := []*cluster{
		haControlPlaneOn(t, skiffBinary, n, n.addHost(), "cp-2", c.ports, c.ServerURL(n), cpToken),
		haNodeOn(t, skiffBinary, n, n.addHost(), "cp-3", thirdRoles, c.ports, c.ServerURL(n), cpToken),
	}
	waitEtcdMembers(t, c, 3)
	token := c.createToken()
	w := newJoinedNode(t, n.addHost(), "worker-1", c.ServerURL(n))
	// After the worker stops (cleanups run last first), its pods' containers go too: a stopped
	// skiff leaves them running by design, and these loop forever.
	t.Cleanup(func() { reapKilledWorker(t, w.dataDir) })
	w.start(token)
	t.Cleanup(w.stop)
	waitNodeReady(t, c, w)
	archive, err := execOutput(skiffBinary, "images", "build-busybox", "--out", c.dataDir)
	if err != nil {
		t.Fatalf("build image: %v\n%s", err, archive)
	}
	if out, err := execOutput(skiffBinary, "images", "import", "--data-dir", w.dataDir, strings.TrimSpace(archive)); err != nil {
		t.Fatalf("import image: %v\n%s", err, out)
	}
	applyManifest(t, c, caRotationWeb)
	c.kubectl("run", "ticker", "--image=localhost/busybox:local", "--overrides", `{"spec":{"nodeName":"worker-1"}}`, "--",
		"sh", "-c", "while true; do echo tick; sleep 1; done")
	eventually(t, 180*time.Second, func() error {
		for _, target := range []string{"pod/ticker", "deployment/web", "deployment/client"} {
			cond := "condition=Ready"
			if strings.HasPrefix(target, "deployment/") {
				cond = "condition=Available"
			}
			if out, err := c.kubectlErr("wait", "--for="+cond, target, "--timeout=2s"); err != nil {
				return errString(out)
			}
		}
		return nil
	})
	return &caRotationCluster{net: n, c: c, others: others, worker: w, token: token}
}

// waitNodeReady waits for a joined node to be Ready.
func waitNodeReady(t *testing.T, c *cluster, w *joinedNode) {
	t.Helper()
	eventually(t, 120*time.Second, func() error {
		if out, err := c.kubectlErr("wait", "--for=condition=Ready", "node/"+w.name, "--timeout=2s"); err != nil {
			node, _ := c.kubectlErr("get", "node/"+w.name, "-o", "jsonpath={.spec}{\"\\n\"}{.status.conditions}")
			return errString(out + "\n" + node + "\n" + w.log())
		}
		return nil
	})
}

func applyManifest(t *testing.T, c *cluster, manifest string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	c.kubectl("apply", "-f", f)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// firstCA is the first certificate of a CA bundle file: the signer, by rotate-ca's order.
func firstCA(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	certs, err := pki.ParseCertificates([]byte(readFile(t, path)))
	if err != nil {
		t.Fatal(err)
	}
	return certs[0]
}

// chainsOnlyTo checks the leaf certificates of dir that a cluster CA issued (the etcd CA's and
// the front proxy's have their own): each is signed by newCA and none by oldCA.
func chainsOnlyTo(dir string, newCA, oldCA *x509.Certificate) error {
	paths, err := filepath.Glob(filepath.Join(dir, "*.crt"))
	if err != nil {
		return err
	}
	var bad []string
	for _, p := range paths {
		base := filepath.Base(p)
		if base == "ca.crt" {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		cert, err := pki.ParseCertificate(data)
		if err != nil || cert.IsCA {
			continue
		}
		if issuer := cert.Issuer.String(); issuer != oldCA.Subject.String() && issuer != newCA.Subject.String() {
			continue
		}
		if cert.CheckSignatureFrom(oldCA) == nil || cert.CheckSignatureFrom(newCA) != nil {
			bad = append(bad, base+" (issuer "+cert.Issuer.CommonName+")")
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s: not signed by the new CA %s: %s", dir, newCA.Subject.CommonName, strings.Join(bad, ", "))
	}
	return nil
}

// caTraffic is the traffic TestCARotation keeps up, and what it saw.
type caTraffic struct {
	wg sync.WaitGroup
	mu sync.Mutex
	caTrafficResult
}

type caTrafficResult struct {
	requests, failed, kubeletCalls, watchRestarts, readyChecks int
	failures                                                   []string
	tally                                                      *httpTally
}

// startCATraffic starts the API requests, the watch, logs and exec through the worker's kubelet,
// and a Ready check of worker-1 every second, until ctx ends.
func startCATraffic(ctx context.Context, c *cluster) *caTraffic {
	tr := &caTraffic{caTrafficResult: caTrafficResult{tally: &httpTally{logs: map[string]string{}}}}
	fail := func(what string, err error) {
		if ctx.Err() != nil {
			return
		}
		tr.mu.Lock()
		defer tr.mu.Unlock()
		tr.failed++
		if len(tr.failures) < 20 {
			tr.failures = append(tr.failures, fmt.Sprintf("%s %s: %v", time.Now().Format(time.TimeOnly), what, err))
		}
	}
	count := func(n *int) {
		tr.mu.Lock()
		*n++
		tr.mu.Unlock()
	}
	every := func(d time.Duration, f func()) {
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			f()
		}
	}
	tr.wg.Go(func() {
		every(100*time.Millisecond, func() {
			if _, _, err := freshRequest(ctx, c.kubeconfig); err != nil {
				fail("request", err)
			}
			count(&tr.requests)
		})
	})
	tr.wg.Go(func() {
		for ctx.Err() == nil {
			err := watchPods(ctx, c.kubeconfig)
			if ctx.Err() != nil {
				return
			}
			count(&tr.watchRestarts)
			if err != nil {
				fail("watch", err)
			}
		}
	})
	tr.wg.Go(func() {
		every(2*time.Second, func() {
			if out, err := c.kubectlErr("logs", "ticker", "--tail=1"); err != nil || !strings.Contains(out, "tick") {
				fail("logs", fmt.Errorf("%v: %s", err, out))
			}
			if out, err := c.kubectlErr("exec", "ticker", "--", "echo", "exec-ok"); err != nil || !strings.Contains(out, "exec-ok") {
				fail("exec", fmt.Errorf("%v: %s", err, out))
			}
			count(&tr.kubeletCalls)
		})
	})
	tr.wg.Go(func() {
		every(time.Second, func() {
			out, err := c.kubectlErr("get", "node", "worker-1", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
			if err != nil || strings.TrimSpace(out) != "True" {
				fail("worker-1 Ready", fmt.Errorf("%v: %q", err, out))
			}
			count(&tr.readyChecks)
		})
	})
	tr.wg.Go(func() {
		// The client pod's log, read now and then: it is the pod traffic's record.
		every(20*time.Second, func() { _ = tr.tally.collect(c) })
	})
	return tr
}

// wait waits for the traffic to stop and returns what it saw.
func (tr *caTraffic) wait() caTrafficResult {
	tr.wg.Wait()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.caTrafficResult
}

// linesWith is up to max lines of text that contain sub.
func linesWith(text, sub string, max int) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) && len(out) < max {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
