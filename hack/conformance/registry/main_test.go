package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeArchive writes a docker-archive of one single-layer image tagged tags, as `docker save`
// and the harness's builds do, and returns the layer's and the config's bytes.
func writeArchive(t *testing.T, path string, tags ...string) (layer, config []byte) {
	t.Helper()
	var lb bytes.Buffer
	lw := tar.NewWriter(&lb)
	content := []byte("#!/bin/sh\necho hello\n")
	if err := lw.WriteHeader(&tar.Header{Name: "hello", Mode: 0o755, Size: int64(len(content))}); err != nil {
		t.Fatal(err)
	}
	lw.Write(content)
	lw.Close()
	layer = lb.Bytes()
	sum := sha256.Sum256(layer)
	config, _ = json.Marshal(map[string]any{"architecture": "amd64", "os": "linux",
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(sum[:])}}})
	manifest, _ := json.Marshal([]map[string]any{{"Config": "cfg.json", "RepoTags": tags, "Layers": []string{"abc/layer.tar"}}})
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for _, e := range []struct {
		name string
		data []byte
	}{{"abc/layer.tar", layer}, {"cfg.json", config}, {"manifest.json", manifest}} {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data))}); err != nil {
			t.Fatal(err)
		}
		tw.Write(e.data)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return layer, config
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func get(t *testing.T, method, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// TestServesArchivesAsARegistry pulls an image the way containerd does through a mirror: the
// manifest by tag (ns naming the registry), then the config and the layer by the digests it
// names, each checked against the archive's bytes.
func TestServesArchivesAsARegistry(t *testing.T) {
	dir := t.TempDir()
	layer, config := writeArchive(t, filepath.Join(dir, "agnhost.tar"), "registry.k8s.io/e2e-test-images/agnhost:2.53")
	writeArchive(t, filepath.Join(dir, "other.tar"), "docker.io/library/busybox:1.36")
	archives, _ := filepath.Glob(filepath.Join(dir, "*.tar"))
	s, err := load(archives)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.hosts(), ","); got != "docker.io,registry.k8s.io" {
		t.Fatalf("hosts %q", got)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()

	if resp, _ := get(t, "GET", srv.URL+"/v2/"); resp.StatusCode != 200 {
		t.Fatalf("/v2/: %d", resp.StatusCode)
	}
	resp, body := get(t, "GET", srv.URL+"/v2/e2e-test-images/agnhost/manifests/2.53?ns=registry.k8s.io")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != mediaManifest {
		t.Fatalf("manifest: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if resp.Header.Get("Docker-Content-Digest") != digestOf(body) {
		t.Fatalf("manifest digest header %s, body's %s", resp.Header.Get("Docker-Content-Digest"), digestOf(body))
	}
	var m struct {
		Config descriptor
		Layers []descriptor
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if m.Config.Digest != digestOf(config) || len(m.Layers) != 1 || m.Layers[0].Digest != digestOf(layer) || m.Layers[0].Size != int64(len(layer)) {
		t.Fatalf("manifest %s does not name the archive's config and layer", body)
	}
	// By digest, as containerd fetches it after resolving the tag; HEAD as it resolves.
	if resp, _ := get(t, "GET", srv.URL+"/v2/e2e-test-images/agnhost/manifests/"+digestOf(body)+"?ns=registry.k8s.io"); resp.StatusCode != 200 {
		t.Fatalf("manifest by digest: %d", resp.StatusCode)
	}
	if resp, b := get(t, "HEAD", srv.URL+"/v2/e2e-test-images/agnhost/manifests/2.53?ns=registry.k8s.io"); resp.StatusCode != 200 || len(b) != 0 || resp.ContentLength != int64(len(body)) {
		t.Fatalf("HEAD manifest: %d, %d bytes, length %d", resp.StatusCode, len(b), resp.ContentLength)
	}
	for _, want := range [][]byte{config, layer} {
		resp, got := get(t, "GET", srv.URL+"/v2/e2e-test-images/agnhost/blobs/"+digestOf(want))
		if resp.StatusCode != 200 || !bytes.Equal(got, want) {
			t.Fatalf("blob %s: %d, %d bytes, want %d", digestOf(want), resp.StatusCode, len(got), len(want))
		}
	}
	if resp, got := get(t, "GET", srv.URL+"/v2/e2e-test-images/agnhost/blobs/"+digestOf(layer), "Range", "bytes=10-19"); resp.StatusCode != http.StatusPartialContent || !bytes.Equal(got, layer[10:20]) {
		t.Fatalf("ranged blob: %d %q", resp.StatusCode, got)
	}
	// Unknown names, tags, registries and blobs are the registry API's errors, not someone
	// else's image.
	for _, path := range []string{
		"/v2/e2e-test-images/agnhost/manifests/2.52?ns=registry.k8s.io",
		"/v2/e2e-test-images/agnhost/manifests/2.53?ns=gcr.io",
		"/v2/library/busybox/manifests/1.36?ns=registry.k8s.io",
		"/v2/e2e-test-images/agnhost/blobs/sha256:00",
	} {
		if resp, _ := get(t, "GET", srv.URL+path); resp.StatusCode != 404 {
			t.Errorf("%s: %d, want 404", path, resp.StatusCode)
		}
	}
	if resp, _ := get(t, "GET", srv.URL+"/v2/library/busybox/manifests/1.36?ns=docker.io"); resp.StatusCode != 200 {
		t.Errorf("the second archive's image: %d", resp.StatusCode)
	}
	if resp, _ := get(t, "PUT", srv.URL+"/v2/e2e-test-images/agnhost/manifests/2.53"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %d", resp.StatusCode)
	}
}

func TestRefusesWhatIsNotADockerArchive(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.tar")
	if err := os.WriteFile(path, []byte("not a tar"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := load([]string{path}); err == nil {
		t.Fatal("loaded a file that is no archive")
	}
	if _, _, ok := splitTag("busybox:1.36"); ok {
		t.Fatal("a tag without a registry host was taken")
	}
}
