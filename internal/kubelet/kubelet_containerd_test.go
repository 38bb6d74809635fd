package kubelet_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/images"
	"github.com/skiff-sh/skiff/internal/kubelet"
	"github.com/skiff-sh/skiff/internal/kubelet/containerd/containerdtest"
)

// TestKubeletRunsPodOnRealContainerd runs the kubelet against a real,
// supervised containerd (and a fake API): a pod serving HTTP reaches
// Running, answers on its IP, gets its env and memory limit, and stops
// within its grace period when deleted.
func TestKubeletRunsPodOnRealContainerd(t *testing.T) {
	env := containerdtest.Start(t)
	client := fake.NewClientset()
	// The fake's watches do not resume from a list's resourceVersion: a pod created after the
	// kubelet's informer listed but before it watched would never reach it (a CI run under the race
	// detector timed out so). The reactor opens the watch itself and says when the first one, the
	// kubelet's, is open.
	podsWatched := make(chan struct{})
	var watchedOnce sync.Once
	client.PrependWatchReactor("pods", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(action.GetResource(), action.GetNamespace())
		watchedOnce.Do(func() { close(podsWatched) })
		return true, w, err
	})
	cfg := kubelet.Default("real-node", env.DataDir)
	cfg.Roles = []string{"worker"}
	k, err := kubelet.New(cfg, kubelet.Deps{
		Client: client, Runtime: env.Runtime, Recorder: record.NewFakeRecorder(1000),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := k.Run(ctx); err != nil {
			t.Errorf("kubelet: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	<-k.Ready()
	select {
	case <-podsWatched:
	case <-time.After(30 * time.Second):
		t.Fatal("the kubelet never watched pods")
	}

	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "page", Namespace: "default"},
		Data:       map[string]string{"greeting": "hello from skiff", "index.html": "served from a configMap volume\n"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-real-web"},
		Spec: corev1.PodSpec{
			NodeName:                      "real-node",
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](3),
			InitContainers: []corev1.Container{{
				Name: "prepare", Image: images.BusyboxImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"/bin/sh", "-c", "echo init-ran"},
			}},
			Containers: []corev1.Container{{
				Name: "httpd", Image: images.BusyboxImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"/bin/sh", "-c", "echo \"$GREETING on $(POD_NAME)\" > /scratch/env.html && exec httpd -f -p 8080 -h /www"},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "site", MountPath: "/www"},
					{Name: "scratch", MountPath: "/scratch"},
					{Name: "info", MountPath: "/etc/podinfo"},
				},
				Env: []corev1.EnvVar{
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "page"}, Key: "greeting"}}},
				},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/index.html", Port: intstr.FromString("http")}},
					PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 3, SuccessThreshold: 1,
				},
				LivenessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/www/index.html"}}},
					PeriodSeconds: 1, TimeoutSeconds: 2, FailureThreshold: 3, SuccessThreshold: 1,
				},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resourceQuantity("96Mi"), corev1.ResourceCPU: resourceQuantity("500m")}},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "site", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "page"}, Items: []corev1.KeyToPath{{Key: "index.html", Path: "index.html"}}}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
	}
	w, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	created := time.Now()
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := waitForPod(t, w, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	runningAt := time.Since(created)
	// Ready only once the kubelet's HTTP readiness probe reached the pod.
	ready := waitForPod(t, w, func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
	t.Logf("ready (HTTP readiness probe passed) after %v", time.Since(created))
	if ready.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("restarted although the liveness probe passes: %+v", ready.Status.ContainerStatuses[0])
	}
	startup := runningAt
	if running.Status.PodIP == "" {
		t.Fatalf("running pod without IP: %+v", running.Status)
	}
	if !strings.HasPrefix(running.Status.ContainerStatuses[0].ContainerID, "containerd://") {
		t.Errorf("containerID = %q", running.Status.ContainerStatuses[0].ContainerID)
	}
	if running.Status.InitContainerStatuses[0].State.Terminated == nil || running.Status.InitContainerStatuses[0].State.Terminated.Reason != "Completed" {
		t.Errorf("init status = %+v", running.Status.InitContainerStatuses[0])
	}
	body := fetch(t, fmt.Sprintf("http://%s:8080/index.html", running.Status.PodIP))
	if body != "served from a configMap volume\n" {
		t.Errorf("GET = %q", body)
	}
	containerID := strings.TrimPrefix(running.Status.ContainerStatuses[0].ContainerID, "containerd://")
	for _, check := range []struct {
		cmd  string
		want string
	}{
		{"cat /scratch/env.html", "hello from skiff on web"},
		{"cat /etc/podinfo/name", "web"},
		{"grep ' /scratch ' /proc/mounts | cut -d' ' -f3", "tmpfs"},
		{"touch /www/x 2>/dev/null && echo writable || echo read-only", "read-only"},
	} {
		out, stderr, code, err := env.Runtime.ExecSync(ctx, containerID, []string{"sh", "-c", check.cmd}, 5*time.Second)
		if err != nil || code != 0 || strings.TrimSpace(string(out)) != check.want {
			t.Errorf("%s = %q (stderr %q, code %d, %v), want %q", check.cmd, out, stderr, code, err, check.want)
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err == nil {
		out, _, code, err := env.Runtime.ExecSync(ctx, containerID, []string{"cat", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}, 5*time.Second)
		if err != nil || code != 0 || strings.TrimSpace(string(out)) != fmt.Sprint(96<<20) {
			t.Errorf("memory limit = %q (code %d, %v)", out, code, err)
		}
	}
	checkKubeletEndpoint(t, ctx, k)

	// Graceful deletion: the kubelet stops the pod and deletes it for good.
	current, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	current.DeletionTimestamp = &now
	current.DeletionGracePeriodSeconds = ptr.To[int64](3)
	deleteStart := time.Now()
	if _, err := client.CoreV1().Pods("default").Update(ctx, current, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForDeletion(t, w)
	stopped := time.Since(deleteStart)
	if stopped > 3*time.Second+5*time.Second {
		t.Errorf("pod took %v to stop with a 3s grace period", stopped)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		sandboxes, err := env.Runtime.ListPodSandbox(ctx, nil)
		if err == nil && len(sandboxes) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandboxes left after deletion: %v %v", sandboxes, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("latency: create to Running (watch) %v; delete to gone %v", startup, stopped)
}

func waitForPod(t *testing.T, w watch.Interface, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case ev := <-w.ResultChan():
			if p, ok := ev.Object.(*corev1.Pod); ok && cond(p) {
				return p
			}
		case <-timeout:
			t.Fatal("timed out waiting for the pod")
		}
	}
}

func waitForDeletion(t *testing.T, w watch.Interface) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Deleted {
				return
			}
		case <-timeout:
			t.Fatal("timed out waiting for the pod to be deleted")
		}
	}
}

func fetch(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := client.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return string(body)
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func resourceQuantity(s string) resource.Quantity { return resource.MustParse(s) }

// checkKubeletEndpoint serves the kubelet API over TLS with client
// certificates and uses it as the API server would: logs, and exec through
// the runtime's streaming server with client-go's SPDY executor.
func checkKubeletEndpoint(t *testing.T, ctx context.Context, k *kubelet.Kubelet) {
	t.Helper()
	pki := newTestPKI(t)
	srv := httptest.NewUnstartedServer(k.Handler())
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pki.serverCert}, ClientCAs: pki.pool, ClientAuth: tls.VerifyClientCertIfGiven}
	srv.StartTLS()
	defer srv.Close()

	anonymous := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.pool}}}
	resp, err := anonymous.Get(srv.URL + "/containerLogs/default/web/prepare")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous request = %d, want 401", resp.StatusCode)
	}

	restConfig := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: pki.caPEM, CertData: pki.clientCert, KeyData: pki.clientKey}}
	transport, err := rest.TransportFor(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = (&http.Client{Transport: transport}).Get(srv.URL + "/containerLogs/default/web/prepare")
	if err != nil {
		t.Fatal(err)
	}
	logs, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(logs) != "init-ran\n" {
		t.Errorf("init container logs = %d %q", resp.StatusCode, logs)
	}

	// Exec over the websocket protocol (channel.k8s.io: the first byte of
	// each message names the stream), proxied to containerd's streaming server.
	dialer := websocket.Dialer{
		TLSClientConfig: &tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{clientCertificate(t, pki)}},
		Subprotocols:    []string{"v4.channel.k8s.io", "channel.k8s.io"},
	}
	wsURL := "wss" + strings.TrimPrefix(srv.URL, "https") + "/exec/default/web/httpd?command=cat&command=/etc/podinfo/name&output=1&error=1"
	conn, resp, err := dialer.DialContext(ctx, wsURL, nil)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("exec websocket through the kubelet: %v (HTTP %d)", err, status)
	}
	defer conn.Close()
	var stdout strings.Builder
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		_, message, err := conn.ReadMessage()
		if err != nil {
			break
		}
		if len(message) > 0 && message[0] == 1 {
			stdout.Write(message[1:])
		}
	}
	if stdout.String() != "web" {
		t.Errorf("exec stdout = %q, want %q", stdout.String(), "web")
	}
	checkKubeletWebSockets(t, ctx, restConfig, srv.URL)
}

func clientCertificate(t *testing.T, pki *testPKI) tls.Certificate {
	t.Helper()
	cert, err := tls.X509KeyPair(pki.clientCert, pki.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
