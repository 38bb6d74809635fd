package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-sh/skiff/internal/simnode"
)

// upstreamBinDir holds Kubernetes' own kube-scheduler and kube-controller-manager (v1.33):
// $SKIFF_UPSTREAM_BIN, else /root/.cache/skiff-upstream/bin.
func upstreamBinDir() string {
	if d := os.Getenv("SKIFF_UPSTREAM_BIN"); d != "" {
		return d
	}
	return "/root/.cache/skiff-upstream/bin"
}

// upstreamHolder is how kube-scheduler and kube-controller-manager name themselves in a Lease:
// <host>_<uuid> (skiff's own components use <host>_<pid>).
var upstreamHolder = regexp.MustCompile(`_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestUpstreamComponents runs Kubernetes' own kube-scheduler and kube-controller-manager (v1.33)
// against a skiff control plane whose scheduler and controller manager are turned off, each with
// its own identity (system:kube-scheduler, system:kube-controller-manager, client certificates
// from `skiff kubeconfig --user`) and leader election on: both take their Leases and report every
// informer synced, the controller manager turns a Deployment into a ReplicaSet and pods, the
// scheduler binds them to simulated nodes, and the garbage collector and namespace controller
// clean up. Neither component may log a failed list or watch.
func TestUpstreamComponents(t *testing.T) {
	bin := upstreamBinDir()
	for _, b := range []string{"kube-scheduler", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Skipf("upstream %s not found in %s (set SKIFF_UPSTREAM_BIN; docs/user/upstream-components.md says how to build them): %v", b, bin, err)
		}
	}
	c := newCluster(t, "--disable-scheduler", "--disable-controller-manager")
	dir := t.TempDir()
	schedKubeconfig := c.userKubeconfig(t, dir, "system:kube-scheduler")
	kcmKubeconfig := c.userKubeconfig(t, dir, "system:kube-controller-manager")
	pki := filepath.Join(c.dataDir, "pki")

	schedConfig := filepath.Join(dir, "scheduler.yaml")
	if err := os.WriteFile(schedConfig, []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: %q}
leaderElection: {leaderElect: true}
`, schedKubeconfig)), 0o600); err != nil {
		t.Fatal(err)
	}
	schedPort, kcmPort := freePort(t), freePort(t)
	sched := startUpstreamComponent(t, dir, filepath.Join(bin, "kube-scheduler"),
		"--config", schedConfig, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(schedPort),
		"--cert-dir", filepath.Join(dir, "scheduler-certs"),
		"--authentication-kubeconfig", schedKubeconfig, "--authorization-kubeconfig", schedKubeconfig, "--v=2")
	kcm := startUpstreamComponent(t, dir, filepath.Join(bin, "kube-controller-manager"),
		"--kubeconfig", kcmKubeconfig, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(kcmPort),
		"--cert-dir", filepath.Join(dir, "kcm-certs"),
		"--authentication-kubeconfig", kcmKubeconfig, "--authorization-kubeconfig", kcmKubeconfig,
		"--leader-elect=true", "--use-service-account-credentials=true", "--controllers=*",
		"--root-ca-file", filepath.Join(pki, "ca.crt"),
		"--cluster-signing-cert-file", filepath.Join(pki, "ca.crt"), "--cluster-signing-key-file", filepath.Join(pki, "ca.key"),
		"--service-account-private-key-file", filepath.Join(pki, "sa.key"), "--v=2")
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpState()
			sched.logTail(t)
			kcm.logTail(t)
		}
	})

	const nodes = 3
	c.startSimNodes(t, simnode.Config{Nodes: nodes, NamePrefix: "up-", HeartbeatInterval: 2 * time.Second})
	cs := c.clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Leader election: the Leases skiff's own components would hold are held by the upstream ones.
	for _, name := range []string{"kube-scheduler", "kube-controller-manager"} {
		eventually(t, 90*time.Second, func() error {
			l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if l.Spec.HolderIdentity == nil || !upstreamHolder.MatchString(*l.Spec.HolderIdentity) {
				return fmt.Errorf("lease kube-system/%s holder %v, want an upstream <host>_<uuid> identity", name, l.Spec.HolderIdentity)
			}
			return nil
		})
	}
	// Every informer synced: the scheduler's readiness includes its event handlers' sync, the
	// controller manager's health every started controller's.
	eventually(t, 90*time.Second, func() error {
		return componentHealthy(ctx, schedPort, "/readyz?verbose", "[+]sched-handler-sync ok", "[+]leaderElection ok", "readyz check passed")
	})
	eventually(t, 90*time.Second, func() error {
		return componentHealthy(ctx, kcmPort, "/healthz?verbose", "[+]garbage-collector-controller ok", "[+]replicaset-controller ok",
			"[+]deployment-controller ok", "[+]namespace-controller ok", "healthz check passed")
	})
	eventually(t, 60*time.Second, func() error {
		n, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(n.Items) != nodes {
			return fmt.Errorf("%d nodes, want %d", len(n.Items), nodes)
		}
		return nil
	})

	// A Deployment in a new namespace: the upstream service-account controller gives the namespace
	// its default ServiceAccount (pods need it), the deployment and replicaset controllers make a
	// ReplicaSet and pods, the scheduler binds them to the simulated nodes.
	const ns = "upstream"
	c.kubectl("create", "namespace", ns)
	c.kubectl("-n", ns, "create", "deployment", "web", "--image=registry.example/web:v1", "--replicas=3")
	deploy, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rs appsv1.ReplicaSet
	eventually(t, 120*time.Second, func() error {
		list, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d replicasets, want 1", len(list.Items))
		}
		rs = list.Items[0]
		if ref := metav1.GetControllerOf(&rs); ref == nil || ref.UID != deploy.UID {
			return fmt.Errorf("replicaset %s is not controlled by deployment web: %v", rs.Name, rs.OwnerReferences)
		}
		return nil
	})
	eventually(t, 120*time.Second, func() error {
		return podsBoundAndOwned(ctx, cs, ns, rs.UID, 3, "up-")
	})
	eventually(t, 120*time.Second, func() error {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas != 3 || d.Status.ObservedGeneration != d.Generation {
			return fmt.Errorf("deployment status: %d available, observed generation %d of %d", d.Status.AvailableReplicas, d.Status.ObservedGeneration, d.Generation)
		}
		return nil
	})
	eventually(t, 60*time.Second, func() error {
		ev, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		scheduled := 0
		for _, e := range ev.Items {
			if e.Reason == "Scheduled" && e.ReportingController == "default-scheduler" {
				scheduled++
			}
		}
		if scheduled < 3 {
			return fmt.Errorf("%d Scheduled events from default-scheduler, want 3", scheduled)
		}
		return nil
	})

	// A rolling update: a second ReplicaSet takes the pods over, the first is scaled to zero.
	c.kubectl("-n", ns, "set", "image", "deployment/web", "web=registry.example/web:v2")
	eventually(t, 120*time.Second, func() error {
		list, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, r := range list.Items {
			want := int32(0)
			if r.Spec.Template.Spec.Containers[0].Image == "registry.example/web:v2" {
				want = 3
			}
			if r.Status.ReadyReplicas != want || *r.Spec.Replicas != want {
				return fmt.Errorf("replicaset %s (%s): %d of %d ready, want %d", r.Name, r.Spec.Template.Spec.Containers[0].Image, r.Status.ReadyReplicas, *r.Spec.Replicas, want)
			}
		}
		if len(list.Items) != 2 {
			return fmt.Errorf("%d replicasets, want 2 after the rollout", len(list.Items))
		}
		return nil
	})

	// Garbage collection: deleting the Deployment (background propagation) removes its
	// ReplicaSet and pods through ownerReferences.
	c.kubectl("-n", ns, "delete", "deployment", "web", "--wait=false")
	eventually(t, 120*time.Second, func() error {
		rss, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(rss.Items)+len(pods.Items) > 0 {
			return fmt.Errorf("%d replicasets and %d pods left after deleting the deployment", len(rss.Items), len(pods.Items))
		}
		return nil
	})

	// The namespace controller empties a deleted namespace and finalizes it.
	c.kubectl("-n", ns, "create", "configmap", "left-behind", "--from-literal=k=v")
	c.kubectl("delete", "namespace", ns, "--wait=false")
	eventually(t, 120*time.Second, func() error {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("namespace %s still exists", ns)
	})

	// Nothing skiff serves differently enough to fail a list or a watch, or to be refused.
	for _, p := range []*upstreamProcess{sched, kcm} {
		if bad := p.apiProblems(); len(bad) > 0 {
			t.Errorf("%s logged list/watch failures against skiff:\n%s", p.name, strings.Join(bad, "\n"))
		}
	}
}

// userKubeconfig writes a kubeconfig for user (a client certificate from the node's CA, via
// `skiff kubeconfig --user`) into dir and returns its path.
func (c *cluster) userKubeconfig(t *testing.T, dir, user string) string {
	t.Helper()
	out, err := exec.Command(c.bin, "kubeconfig", "--data-dir", c.dataDir, "--user", user).Output()
	if err != nil {
		t.Fatalf("skiff kubeconfig --user %s: %v", user, err)
	}
	path := filepath.Join(dir, strings.ReplaceAll(user, ":", "-")+".kubeconfig")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// upstreamProcess is one upstream binary run by a test, its output in a file.
type upstreamProcess struct {
	name, logPath string
	cmd           *exec.Cmd
}

// startUpstreamComponent starts binary with args until the test ends (SIGTERM, then SIGKILL).
func startUpstreamComponent(t *testing.T, dir, binary string, args ...string) *upstreamProcess {
	t.Helper()
	p := &upstreamProcess{name: filepath.Base(binary), logPath: filepath.Join(dir, filepath.Base(binary)+".log")}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start %s: %v", p.name, err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
		logFile.Close()
	})
	return p
}

// transientAPIError marks list/watch failures that say the connection went, not that skiff
// answered differently from Kubernetes.
var transientAPIError = regexp.MustCompile(`connection refused|connection reset|i/o timeout|EOF|context deadline exceeded|TLS handshake timeout|http2: client connection lost|Too many requests|the server is currently unable`)

// apiProblems are the component's log lines about failed lists and watches (informers that
// could not sync: refused, unknown resource, decode errors), less connection trouble.
func (p *upstreamProcess) apiProblems() []string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return []string{err.Error()}
	}
	var bad []string
	for _, l := range strings.Split(string(data), "\n") {
		if (strings.Contains(l, "Failed to watch") || strings.Contains(l, "failed to list") || strings.Contains(l, "Failed to list")) && !transientAPIError.MatchString(l) {
			bad = append(bad, l)
		}
	}
	return bad
}

// logTail logs the component's errors and last lines.
func (p *upstreamProcess) logTail(t *testing.T) {
	data, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var errs []string
	for _, l := range lines {
		if strings.HasPrefix(l, "E") {
			errs = append(errs, l)
		}
	}
	if len(errs) > 40 {
		errs = errs[len(errs)-40:]
	}
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	t.Logf("%s errors:\n%s\n%s last lines:\n%s", p.name, strings.Join(errs, "\n"), p.name, strings.Join(lines, "\n"))
}

// componentHealthy asks a component's secure port (self-signed certificate; the health paths
// need no credentials) for path and wants every one of wants in the answer.
func componentHealthy(ctx context.Context, port int, path string, wants ...string) error {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the component's self-signed serving certificate
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://127.0.0.1:"+strconv.Itoa(port)+path, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	for _, w := range wants {
		if !strings.Contains(string(body), w) {
			return fmt.Errorf("GET %s: %d, lacks %q:\n%s", path, resp.StatusCode, w, body)
		}
	}
	return nil
}

// podsBoundAndOwned wants n pods in ns controlled by owner, each bound to a node named
// nodePrefix*, Running.
func podsBoundAndOwned(ctx context.Context, cs kubernetes.Interface, ns string, owner types.UID, n int, nodePrefix string) error {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	ok := 0
	for _, p := range pods.Items {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.UID != owner {
			return fmt.Errorf("pod %s is not controlled by the replicaset: %v", p.Name, p.OwnerReferences)
		}
		if !strings.HasPrefix(p.Spec.NodeName, nodePrefix) || p.Status.Phase != corev1.PodRunning {
			continue
		}
		ok++
	}
	if ok != n || len(pods.Items) != n {
		return fmt.Errorf("%d of %d pods bound to %s* nodes and Running, want %d", ok, len(pods.Items), nodePrefix, n)
	}
	return nil
}
