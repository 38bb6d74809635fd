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

// upgradeWeb is the served application: busybox httpd pods behind a Service. upgradeClient
// requests it every 50 ms through the Service's cluster IP and prints ok or fail per request
// (under timeout: busybox 1.35's wget crashes with -T).
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
        command: [sh, -c, "mkdir -p /www && echo hello > /www/index.html && exec httpd -f -p 8080 -h /www"]
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
        command: [sh, -c, 'while :; do if timeout 2 wget -q -O /dev/null http://$WEB_SERVICE_HOST:$WEB_SERVICE_PORT/; then echo ok; else echo fail $(date +%s); fi; sleep 0.05; done']
`

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

func (h *httpTally) counts() (ok, failed int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range h.logs {
		ok += strings.Count(l, "ok\n")
		failed += strings.Count(l, "fail")
	}
	return ok, failed
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

// TestRollingUpgrade is issue 30's upgrade: a cluster started on the skiff of upgradeFromCommit,
// upgraded one node at a time to this tree's (control planes first; each worker drained with
// kubectl drain, stopped, started on the new binary over the same data dir, Ready, uncordoned),
// while a writer records every acknowledged write, an informer watches, and a client pod requests
// a Service every 50 ms. At the end every acknowledged write reads back and was seen by the
// informer, the failed requests are counted, and no pod restarted that was not on the drained
// node. Then a binary claiming an older minor is refused on an upgraded data dir, naming both
// versions and the rule, and leaves the data dir as it was.
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
	cps := []*cluster{cp1}

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
		_, _ = cp1.kubectlErr("delete", "deployment", "--all", "--timeout=30s")
		_, _ = cp1.kubectlErr("delete", "pods", "--all", "--grace-period=1", "--timeout=60s")
	})
	waitNodesReady(t, cp1, 3*time.Minute, "worker-1", "worker-2")
	importBusybox(t, cp1, workers...)
	cp1.stdin(upgradeWeb, "apply", "-f", "-")
	eventually(t, 3*time.Minute, func() error {
		if out, err := cp1.kubectlErr("rollout", "status", "deployment/web", "--timeout=2s"); err != nil {
			return errString(out)
		}
		return nil
	})
	cp1.stdin(upgradeClient, "apply", "-f", "-")
	eventually(t, 3*time.Minute, func() error {
		if out, err := cp1.kubectlErr("rollout", "status", "deployment/client", "--timeout=2s"); err != nil {
			return errString(out)
		}
		return nil
	})
	tally := &httpTally{logs: map[string]string{}}
	eventually(t, time.Minute, func() error {
		err := tally.collect(cp1)
		if ok, failed := tally.counts(); ok < 10 {
			return fmt.Errorf("client: %d requests answered, %d failed (%v)", ok, failed, err)
		}
		return nil
	})
	seen, stopWatch := configMapWatch(t, cp1)
	defer stopWatch()
	writes := startWriteRecorder(t, "upg", cps...)
	writes.waitForMore(t, 3, time.Minute)
	upgradeBegan := time.Now()

	// Control planes first, one at a time.
	for _, c := range cps {
		before := podRecords(t, cp1)
		began := time.Now()
		c.stop()
		c.bin = skiffBinary
		c.start()
		t.Logf("figure: control plane restarted on the new binary and ready in %s", time.Since(began).Round(100*time.Millisecond))
		writes.waitForMore(t, 3, time.Minute)
		checkUntouched(t, cp1, before, "")
	}
	// Then the workers: drain, stop, start on the new binary, Ready, uncordon.
	for _, w := range workers {
		if err := tally.collect(cp1); err != nil {
			t.Logf("client logs before draining %s: %v", w.name, err)
		}
		before := podRecords(t, cp1)
		began := time.Now()
		if out, err := cp1.kubectlErr("drain", w.name, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=2m"); err != nil {
			t.Fatalf("kubectl drain %s: %v\n%s", w.name, err, out)
		}
		t.Logf("figure: kubectl drain %s took %s", w.name, time.Since(began).Round(100*time.Millisecond))
		w.stop()
		w.bin = skiffBinary
		w.start("")
		waitNodesReady(t, cp1, 2*time.Minute, w.name)
		cp1.kubectl("uncordon", w.name)
		t.Logf("figure: worker %s drained, upgraded, Ready and uncordoned in %s", w.name, time.Since(began).Round(100*time.Millisecond))
		for _, d := range []string{"web", "client"} {
			eventually(t, 2*time.Minute, func() error {
				if out, err := cp1.kubectlErr("rollout", "status", "deployment/"+d, "--timeout=2s"); err != nil {
					return errString(out)
				}
				return nil
			})
		}
		checkUntouched(t, cp1, before, w.name)
	}
	t.Logf("figure: whole upgrade (1 control plane, 2 workers) took %s", time.Since(upgradeBegan).Round(time.Second))
	writes.waitForMore(t, 3, time.Minute)
	eventually(t, time.Minute, func() error { return tally.collect(cp1) })
	acked, window := writes.stopAndCheck(t, cp1, "the rolling upgrade", upgradeBegan)
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
	ok, failed := tally.counts()
	t.Logf("figure: across the upgrade, %d acknowledged writes all read back and seen by the informer (failed-write window %s); client HTTP requests: %d answered, %d failed",
		acked, window.Round(100*time.Millisecond), ok, failed)
	for _, w := range workers {
		if v := cp1.kubectl("get", "node", w.name, "-o", "jsonpath={.status.nodeInfo.kubeletVersion}"); v != "v1.33.0+skiff" {
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
	waitNodesReady(t, cp1, 2*time.Minute, w.name)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
