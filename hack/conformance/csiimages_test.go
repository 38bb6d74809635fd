package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCSIImageList: build-csi-images.sh --list names each image the csi-hostpath and mock drivers'
// manifests run, once, those of the any-volume-data-source spec (populator, validator), and the
// snapshot controller the harness deploys; commented-out images and the other drivers' manifests
// are not its business.
func TestCSIImageList(t *testing.T) {
	cache := t.TempDir()
	src := filepath.Join(cache, "src", "kubernetes-v1.33.13")
	manifests := filepath.Join(src, "test", "e2e", "testing-manifests", "storage-csi")
	files := map[string]string{
		"hostpath/hostpath/csi-hostpath-plugin.yaml": `spec:
  containers:
    - name: hostpath
      image: registry.k8s.io/sig-storage/hostpathplugin:v1.16.1
      args: ["--v=5"]
    - name: node-driver-registrar
      image:   registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.13.0   # the registrar
#   image: registry.k8s.io/sig-storage/commented-out:v0.0.1
`,
		"hostpath/hostpath/csi-hostpath-testing.yaml": "        - image: registry.k8s.io/sig-storage/hostpathplugin:v1.16.1\n          name: socat\n",
		"mock/csi-mock-driver.yaml": "      - name: mock\n        image: registry.k8s.io/sig-storage/hostpathplugin:v1.16.1\n" +
			"      - name: busybox\n        image: registry.k8s.io/e2e-test-images/busybox:1.36.1-1\n",
		"gce-pd/node_ds.yaml":                               "        image: registry.k8s.io/cloud-provider-gcp/gcp-compute-persistent-disk-csi-driver:v1.4.0\n",
		"any-volume-datasource/hello-populator-deploy.yaml": "          image: registry.k8s.io/sig-storage/hello-populator:v1.0.1\n",
		"any-volume-datasource/volume-data-source-validator/setup-data-source-validator.yaml": "          image: registry.k8s.io/sig-storage/volume-data-source-validator:v1.0.0\n",
	}
	for name, body := range files {
		path := filepath.Join(manifests, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, ".ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "build-csi-images.sh", "--list", cache).CombinedOutput()
	if err != nil {
		t.Fatalf("build-csi-images.sh --list: %v\n%s", err, out)
	}
	got := strings.Fields(string(out))
	want := []string{
		"registry.k8s.io/e2e-test-images/busybox:1.36.1-1",
		"registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.13.0",
		"registry.k8s.io/sig-storage/hello-populator:v1.0.1",
		"registry.k8s.io/sig-storage/hostpathplugin:v1.16.1",
		"registry.k8s.io/sig-storage/snapshot-controller:v8.2.0",
		"registry.k8s.io/sig-storage/volume-data-source-validator:v1.0.0",
	}
	if !slices.Equal(got, want) {
		t.Errorf("--list:\n got %q\nwant %q", got, want)
	}
}

// TestCSIImageListNeedsSource: without the k8s source (build-e2e.sh prepares it) there is no list
// to give, and the script says so rather than printing only the snapshot controller.
func TestCSIImageListNeedsSource(t *testing.T) {
	out, err := exec.Command("bash", "build-csi-images.sh", "--list", t.TempDir()).CombinedOutput()
	if err == nil {
		t.Fatalf("--list without a source succeeded: %s", out)
	}
	if !strings.Contains(string(out), "build-e2e.sh") {
		t.Errorf("the error does not say what prepares the source: %s", out)
	}
}
