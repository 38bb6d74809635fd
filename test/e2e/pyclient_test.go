package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pythonClientScript drives skiff with the official Python client (Debian's python3-kubernetes) the
// way operators written in Python do: a watch that resumes from a resourceVersion, logs followed with
// follow=True, and exec over its WebSocket stream. The client sends booleans capitalised ("True").
const pythonClientScript = `
import sys
from kubernetes import client, config, watch
from kubernetes.stream import stream

config.load_kube_config()
v1 = client.CoreV1Api()
ns = "default"

rv = v1.list_namespaced_config_map(ns).metadata.resource_version
v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-a")))
seen, resume = [], None
for ev in watch.Watch().stream(v1.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=10):
    seen.append((ev["type"], ev["object"].metadata.name))
    if ev["object"].metadata.name == "py-a":
        resume = ev["object"].metadata.resource_version
        break
assert ("ADDED", "py-a") in seen, seen
v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-b")))
names = []
for ev in watch.Watch().stream(v1.list_namespaced_config_map, ns, resource_version=resume, timeout_seconds=10):
    names.append(ev["object"].metadata.name)
    if ev["object"].metadata.name == "py-b":
        break
assert names == ["py-b"], names
print("watch-resume-ok")

resp = v1.read_namespaced_pod_log("talker", ns, follow=True, _preload_content=False)
for line in resp.stream():
    if b"hello-from-the-log" in line:
        print("follow-ok")
        break
resp.release_conn()

out = stream(v1.connect_get_namespaced_pod_exec, "talker", ns, command=["echo", "exec-from-python"],
             stderr=True, stdin=False, stdout=True, tty=False)
assert "exec-from-python" in out, out
print("exec-ok")
`

func TestPythonClient(t *testing.T) {
	requirePythonClient(t)
	c := newWorkerCluster(t)
	c.kubectl("run", "talker", "--image=localhost/busybox:local", "--", "sh", "-c", "echo hello-from-the-log; exec sleep 3600")
	c.kubectl("wait", "--for=condition=Ready", "pod/talker", "--timeout=60s")
	out := runPythonClient(t, c, "client.py", pythonClientScript)
	for _, want := range []string{"watch-resume-ok", "follow-ok", "exec-ok"} {
		if !strings.Contains(out, want) {
			t.Fatalf("python client output lacks %s:\n%s", want, out)
		}
	}
}

// requirePythonClient skips a test when Debian's python3-kubernetes is not installed.
func requirePythonClient(t *testing.T) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import kubernetes").Run(); err != nil {
		t.Skip("python3-kubernetes not installed (run hack/install-python-client.sh)")
	}
}

// runPythonClient runs script with the cluster's kubeconfig and returns its output; it fails the
// test when the script fails.
func runPythonClient(t *testing.T, c *cluster, name, script string) string {
	t.Helper()
	path := filepath.Join(c.dataDir, name)
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/python3", path)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python client %s: %v\n%s", name, err, out)
	}
	return string(out)
}

// pythonTTYExecScript is exec with stdin, stdout, stderr and tty all true, as python3-kubernetes
// (and @kubernetes/client-node) send it for an interactive terminal.
const pythonTTYExecScript = `
from kubernetes import client, config
from kubernetes.stream import stream

config.load_kube_config()
v1 = client.CoreV1Api()
out = stream(v1.connect_get_namespaced_pod_exec, "tty", "default",
             command=["sh", "-c", "test -t 1 && echo from-the-$((6*7))-terminal; echo to-stderr >&2"],
             stdin=True, stdout=True, stderr=True, tty=True)
assert "from-the-42-terminal" in out, out
assert "to-stderr" in out, out
print("tty-exec-ok")
`

// TestPythonClientTTYExec execs a shell with a terminal from the official Python client, which asks
// for stderr too; a terminal carries stderr in its output stream (issue 32, item 5).
func TestPythonClientTTYExec(t *testing.T) {
	requirePythonClient(t)
	c := newWorkerCluster(t)
	c.kubectl("run", "tty", "--image=localhost/busybox:local", "--", "sleep", "3600")
	c.kubectl("wait", "--for=condition=Ready", "pod/tty", "--timeout=60s")
	mustContain(t, runPythonClient(t, c, "tty.py", pythonTTYExecScript), "tty-exec-ok")
}
