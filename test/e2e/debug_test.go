package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestKubectlDebug is `kubectl debug` on a real node: an ephemeral container joins a running pod's
// sandbox and its target container's process namespace, driven interactively (-it, stdin from the
// test) and in the background (then read with kubectl logs); the pod reports both in
// ephemeralContainerStatuses; `kubectl cluster-info dump` writes the nodes, the pods and their logs.
func TestKubectlDebug(t *testing.T) {
	c := newWorkerCluster(t)
	// The target's process is recognisable in ps by its argument.
	c.kubectl("run", "target", "--image=localhost/busybox:local", "--restart=Never", "--", "sleep", "987654")
	c.kubectl("wait", "--for=condition=Ready", "pod/target", "--timeout=60s")

	// Interactive: the shell waits for a line on stdin, so its answer comes after kubectl attached.
	// stdin stays open until the answer is in, as a terminal's would: the runtime ends an attach
	// whose stdin closes.
	out := debugInteractively(t, c, "from-the-test\n", "sleep 987654", "debug", "target", "-it", "--image=localhost/busybox:local",
		"--container=shell", "--target=target", "--", "sh", "-c", `read line; echo "got:$line"; ps`)
	mustContain(t, out, "got:from-the-test", "sleep 987654")

	// Not interactive: the container runs on its own; its output is in kubectl logs.
	c.kubectl("debug", "target", "--image=localhost/busybox:local", "--container=probe", "--target=target",
		"--", "sh", "-c", "echo probe-says-hello; ps; exit 7")
	var pod corev1.Pod
	eventually(t, 60*time.Second, func() error {
		if err := json.Unmarshal([]byte(c.kubectl("get", "pod", "target", "-o", "json")), &pod); err != nil {
			return err
		}
		if s := ephemeralStatus(&pod, "probe"); s == nil || s.State.Terminated == nil {
			return fmt.Errorf("probe not terminated: %+v", pod.Status.EphemeralContainerStatuses)
		}
		return nil
	})
	logs := c.kubectl("logs", "target", "-c", "probe")
	mustContain(t, logs, "probe-says-hello", "sleep 987654")

	// The same log over a websocket (binary frames, then base64 text), as upstream's conformance
	// spec and the dashboard's clients read it.
	mustContain(t, podLogOverWebSocket(t, c, "target", "probe", "binary.k8s.io"), "probe-says-hello")
	mustContain(t, podLogOverWebSocket(t, c, "target", "probe", "base64.binary.k8s.io"), "probe-says-hello")

	// Both are reported, finished, with their exit codes, image and IDs; the pod still runs and is
	// ready: ephemeral containers do not count.
	for name, code := range map[string]int32{"shell": 0, "probe": 7} {
		s := ephemeralStatus(&pod, name)
		if s == nil {
			t.Fatalf("no ephemeralContainerStatuses entry for %s: %+v", name, pod.Status.EphemeralContainerStatuses)
		}
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != code || s.Image != "localhost/busybox:local" ||
			s.ImageID == "" || !strings.HasPrefix(s.ContainerID, "containerd://") || s.Ready || s.RestartCount != 0 {
			t.Errorf("%s status = %+v", name, s)
		}
	}
	if pod.Status.Phase != corev1.PodRunning || len(pod.Status.ContainerStatuses) != 1 || !pod.Status.ContainerStatuses[0].Ready {
		t.Errorf("pod after debugging: phase %s, containers %+v", pod.Status.Phase, pod.Status.ContainerStatuses)
	}

	// Without --target the debugger has a process namespace of its own.
	c.kubectl("debug", "target", "--image=localhost/busybox:local", "--container=alone", "--", "sh", "-c", "ps")
	eventually(t, 60*time.Second, func() error {
		out, _ := c.kubectlErr("get", "pod", "target", "-o", `jsonpath={.status.ephemeralContainerStatuses[?(@.name=="alone")].state.terminated.exitCode}`)
		if out != "0" {
			return fmt.Errorf("alone not terminated: %q", out)
		}
		return nil
	})
	mustNotContain(t, c.kubectl("logs", "target", "-c", "alone"), "sleep 987654")

	// cluster-info dump writes nodes, pods and every container's logs.
	dir := filepath.Join(c.dataDir, "dump")
	out = c.kubectl("cluster-info", "dump", "--output-directory", dir)
	mustContain(t, out, "Cluster info dumped to "+dir)
	nodes, err := os.ReadFile(filepath.Join(dir, "nodes.json"))
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(nodes), `"kind": "NodeList"`, `"kubeletVersion"`)
	pods, err := os.ReadFile(filepath.Join(dir, "default", "pods.json"))
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(pods), `"name": "target"`, `"ephemeralContainerStatuses"`)
	entries, err := os.ReadDir(filepath.Join(dir, "default", "target"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("no logs of pod target in the dump")
	}
	dumped, err := os.ReadFile(filepath.Join(dir, "default", "target", "logs.txt"))
	if err != nil {
		t.Fatalf("%v (dump of the pod: %v)", err, entries)
	}
	mustContain(t, string(dumped), "==== START logs for container target of pod default/target ====")
	if _, err := os.Stat(filepath.Join(dir, "kube-system")); err != nil {
		t.Errorf("no kube-system in the dump: %v", err)
	}
}

// debugInteractively runs kubectl with args, writes input to its stdin and keeps stdin open until
// its output contains until (or a minute passed), then closes it and returns the output.
func debugInteractively(t *testing.T, c *cluster, input, until string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := c.kubectlCmd(ctx, "", args...)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, input); err != nil {
		t.Fatalf("write stdin: %v\n%s", err, out.String())
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(out.String(), until) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// podLogOverWebSocket reads a container's whole log through pods/log as a websocket with the given
// subprotocol, until the server closes it; base64 messages are decoded one by one.
func podLogOverWebSocket(t *testing.T, c *cluster, pod, container, protocol string) string {
	t.Helper()
	config, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig, err := rest.TLSConfigFor(config)
	if err != nil {
		t.Fatal(err)
	}
	u := strings.Replace(config.Host, "https://", "wss://", 1) + "/api/v1/namespaces/default/pods/" + pod + "/log?container=" + container
	wsConfig, err := websocket.NewConfig(u, "http://localhost")
	if err != nil {
		t.Fatal(err)
	}
	wsConfig.TlsConfig, wsConfig.Protocol = tlsConfig, []string{protocol}
	ws, err := websocket.DialConfig(wsConfig)
	if err != nil {
		t.Fatalf("websocket %s (%s): %v", u, protocol, err)
	}
	defer ws.Close()
	_ = ws.SetReadDeadline(time.Now().Add(time.Minute))
	var out strings.Builder
	for {
		var msg []byte
		if err := websocket.Message.Receive(ws, &msg); err != nil {
			if err == io.EOF {
				return out.String()
			}
			t.Fatalf("read websocket log: %v (so far %q)", err, out.String())
		}
		if protocol == "base64.binary.k8s.io" {
			decoded, err := base64.StdEncoding.DecodeString(string(msg))
			if err != nil {
				t.Fatalf("base64 message %q: %v", msg, err)
			}
			msg = decoded
		}
		out.Write(msg)
	}
}

func ephemeralStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.EphemeralContainerStatuses {
		if pod.Status.EphemeralContainerStatuses[i].Name == name {
			return &pod.Status.EphemeralContainerStatuses[i]
		}
	}
	return nil
}
