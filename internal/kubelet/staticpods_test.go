package kubelet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const staticManifest = `apiVersion: v1
kind: Pod
metadata:
  name: static-web
  labels:
    tier: static
spec:
  containers:
  - name: web
    image: localhost/busybox:local
    imagePullPolicy: IfNotPresent
    command: ["httpd", "-f"]
`

func TestStaticPodsAreMirroredAndRun(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "web.yaml")
	if err := os.WriteFile(manifest, []byte(staticManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a manifest"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.PodManifestPath = dir })
	mirror := h.waitPod("default", "static-web-node-a", "mirror pod running", podRunning)
	if mirror.Annotations["kubernetes.io/config.source"] != "file" || mirror.Annotations["kubernetes.io/config.mirror"] == "" ||
		mirror.Annotations["kubernetes.io/config.mirror"] != mirror.Annotations["kubernetes.io/config.hash"] {
		t.Errorf("mirror annotations = %v", mirror.Annotations)
	}
	if mirror.Spec.NodeName != testNode || mirror.Labels["tier"] != "static" {
		t.Errorf("mirror pod = %+v", mirror.ObjectMeta)
	}
	firstHash := mirror.Annotations["kubernetes.io/config.hash"]

	// A changed manifest replaces the pod.
	if err := os.WriteFile(manifest, []byte(strings.Replace(staticManifest, `"-f"`, `"-f", "-v"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	h.step(h.cfg.StaticPodResyncPeriod)
	replaced := h.waitPod("default", "static-web-node-a", "mirror replaced", func(p *corev1.Pod) bool {
		return p.Annotations["kubernetes.io/config.hash"] != firstHash && podRunning(p)
	})
	cfg := h.runtime.ContainerConfig(h.runtime.RunningContainer(string(replaced.UID), "web"))
	if cfg == nil || strings.Join(cfg.Command, " ") != "httpd -f -v" {
		t.Errorf("replaced static pod runs %v", cfg)
	}

	// A removed manifest removes the pod.
	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	h.step(h.cfg.StaticPodResyncPeriod)
	h.eventually("mirror pod deleted", func() bool { return h.pod("default", "static-web-node-a") == nil })
	h.eventually("static pod stopped", func() bool { _, ready := h.runtime.SandboxCount(); return ready == 0 })
}

func TestReadStaticPodsRejectsBadManifests(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"svc.yaml":    "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n",
		"noname.yaml": "apiVersion: v1\nkind: Pod\nspec:\n  containers: []\n",
		"broken.json": "{not json",
		"good.json":   `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ok","namespace":"kube-system"},"spec":{"containers":[{"name":"c","image":"i"}]}}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pods, err := readStaticPods(dir, "n1")
	if len(pods) != 1 || pods[0].pod.Name != "ok-n1" || pods[0].pod.Namespace != "kube-system" {
		t.Errorf("pods = %+v", pods)
	}
	for _, want := range []string{`kind "Service" is not Pod`, "metadata.name is required", "broken.json"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}
