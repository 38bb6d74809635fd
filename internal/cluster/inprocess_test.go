package cluster

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// controlPlaneConfig is a node with the etcd and controlplane roles on free loopback ports and a
// new data dir, without a kubelet (its containerd would start with the node, on a socket path too
// long here).
func controlPlaneConfig(t testing.TB, name string) Config {
	return Config{
		DataDir:     t.TempDir(),
		Roles:       []Role{RoleEtcd, RoleControlPlane},
		BindAddress: "127.0.0.1",
		NodeName:    name,
		Logger:      quiet,
		// 128 MiB for etcd, not 1 GiB: the test machine's disk is shared and often nearly full.
		EtcdConfig:         EtcdConfig{EtcdClientPort: freePort(t), EtcdPeerPort: freePort(t), EtcdDiskReserveBytes: 128 << 20},
		ControlPlaneConfig: ControlPlaneConfig{HTTPSPort: freePort(t)},
		WorkerConfig:       WorkerConfig{ControlPlaneKubelet: ControlPlaneKubeletOff},
	}
}

// The controller manager and scheduler call their own API server's handler directly: the request
// is still authenticated as the component's certificate, authorized by its RBAC and admitted, and
// watches stream.
func TestInProcessClientsKeepIdentityAndAuthorization(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd and the API server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := startServing(ctx, t, "inproc")
	scheduler := inProcessClient(t, n, "system:kube-scheduler")
	review, err := scheduler.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != "system:kube-scheduler" || !contains(u.Groups, "system:authenticated") {
		t.Fatalf("the handler saw %+v, want the scheduler's certificate", u)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}}
	if _, err := scheduler.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the scheduler created a Secret in process: %v, want Forbidden by its RBAC", err)
	}

	manager := inProcessClient(t, n, "system:kube-controller-manager")
	w, err := manager.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	if _, err := manager.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		got, ok := ev.Object.(*corev1.ConfigMap)
		if ev.Type != watch.Added || !ok || got.Name != "c" || got.Data["k"] != "v" {
			t.Fatalf("watch event %v %#v", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("no watch event through the in-process transport")
	}
	bad := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Not_A_Name", Namespace: "default"}}
	if _, err := manager.CoreV1().ConfigMaps("default").Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("an invalid name in process: %v, want Invalid", err)
	}
}

// startServing starts a control plane that serves, with authorization running; it stops when
// the test ends.
func startServing(ctx context.Context, t *testing.T, name string) *Node {
	t.Helper()
	n, err := Start(ctx, controlPlaneConfig(t, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	// Authorization reads the bootstrap policy through the network loopback client, so serve.
	go func() { _ = n.serve() }()
	if err := n.authz.start(ctx, quiet); err != nil {
		t.Fatal(err)
	}
	return n
}

// inProcessClient is user's component client carried to n's handler in process.
func inProcessClient(t *testing.T, n *Node, user string) *kubernetes.Clientset {
	t.Helper()
	network, err := componentRESTConfig(&n.cfg, user, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rc, err := inProcessRESTConfig(network, n.api)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Transport == nil || len(rc.TLSClientConfig.CertData) != 0 {
		t.Fatalf("in-process config still dials: %+v", rc)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// An in-process client is the component's certificate as it is on disk at each request: after
// a CA rotation re-issues it (sign) and retires the old CA, the controller manager and scheduler
// still reach their own API server. They presented the certificate of their start for their
// whole life, and were Unauthorized from the retire on: a single control plane's controllers
// stopped (a CI run's TestCARotation logged it on the first of three control planes, whose
// Leases the other two then took).
func TestInProcessClientsFollowACARotation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd and the API server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := startServing(ctx, t, "inproc-rotate")
	scheduler := inProcessClient(t, n, "system:kube-scheduler")
	whoAmI := func(after string) {
		t.Helper()
		review, err := scheduler.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("after %s: %v", after, err)
		}
		if u := review.Status.UserInfo.Username; u != "system:kube-scheduler" {
			t.Fatalf("after %s: the handler saw %q", after, u)
		}
	}
	whoAmI("start")
	for _, phase := range CARotationPhases {
		if _, err := RotateCA(ctx, n.cfg.DataDir, CAKindCluster, phase, time.Now()); err != nil {
			t.Fatalf("rotate-ca %s: %v", phase, err)
		}
		whoAmI("phase " + string(phase))
	}
}

// A write whose context has expired when its API server gets it (a fenced write held by a pause
// of the process past its deadline: leader.Fence) is not stored.
func TestInProcessWriteAfterItsDeadlineIsNotStored(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd and the API server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := startServing(ctx, t, "inproc-late")
	network, err := componentRESTConfig(&n.cfg, "system:kube-controller-manager", nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rc, err := inProcessRESTConfig(network, n.api)
	if err != nil {
		t.Fatal(err)
	}
	late, stop := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer stop()
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late","namespace":"default"}}`
	req, err := http.NewRequestWithContext(late, http.MethodPost, "https://in-process/api/v1/namespaces/default/configmaps", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if resp, err := rc.Transport.RoundTrip(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 300 {
			t.Fatalf("a write past its deadline answered %s", resp.Status)
		}
	}
	// The transport returns as soon as the context is done; the handler goes on in its own
	// goroutine, so look for a while.
	manager := inProcessClient(t, n, "system:kube-controller-manager")
	for range 20 {
		if _, err := manager.CoreV1().ConfigMaps("default").Get(ctx, "late", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the late write: get = %v, want NotFound", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
