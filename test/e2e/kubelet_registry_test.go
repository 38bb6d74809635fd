package e2e

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// loopbackRegistry is a read-only OCI distribution registry on 127.0.0.1 that serves one image
// (the offline busybox archive) under a single repository and tag, so the kubelet's pull path is
// exercised against a real registry protocol without the internet.
type loopbackRegistry struct {
	server    *httptest.Server
	repo, tag string
	manifest  []byte
	blobs     map[string][]byte // by digest

	mu       sync.Mutex
	requests []string // "METHOD path" in arrival order
}

// Host is the registry's host:port as it appears in image references.
func (r *loopbackRegistry) Host() string { return strings.TrimPrefix(r.server.URL, "http://") }

// Image is the reference that pulls the served image.
func (r *loopbackRegistry) Image() string { return r.Host() + "/" + r.repo + ":" + r.tag }

// Requests returns what the registry was asked so far.
func (r *loopbackRegistry) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

// newLoopbackRegistry serves the docker-archive at archivePath (manifest.json, config, one
// uncompressed layer per entry) as repo:tag with an OCI image manifest.
func newLoopbackRegistry(t *testing.T, archivePath, repo, tag string) *loopbackRegistry {
	t.Helper()
	entries, err := readTarEntries(archivePath)
	if err != nil {
		t.Fatal(err)
	}
	var archiveManifest []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(entries["manifest.json"], &archiveManifest); err != nil || len(archiveManifest) != 1 {
		t.Fatalf("archive %s: manifest.json: %v (%d images)", archivePath, err, len(archiveManifest))
	}
	r := &loopbackRegistry{repo: repo, tag: tag, blobs: map[string][]byte{}}
	descriptor := func(mediaType string, data []byte) map[string]any {
		digest := sha256Digest(data)
		r.blobs[digest] = data
		return map[string]any{"mediaType": mediaType, "digest": digest, "size": len(data)}
	}
	config, ok := entries[archiveManifest[0].Config]
	if !ok {
		t.Fatalf("archive %s lacks its config %s", archivePath, archiveManifest[0].Config)
	}
	var layers []map[string]any
	var diffIDs []string
	for i, name := range archiveManifest[0].Layers {
		layer, ok := entries[name]
		if !ok {
			t.Fatalf("archive %s lacks layer %s", archivePath, name)
		}
		if i == len(archiveManifest[0].Layers)-1 {
			// A file of its own makes the image differ from the imported one, so the node
			// really fetches the layer instead of finding its content already present.
			if layer, err = withFile(layer, registryMarkerPath, []byte(repo+":"+tag+"\n")); err != nil {
				t.Fatal(err)
			}
		}
		diffIDs = append(diffIDs, sha256Digest(layer))
		layers = append(layers, descriptor("application/vnd.oci.image.layer.v1.tar", layer))
	}
	if config, err = withDiffIDs(config, diffIDs); err != nil {
		t.Fatalf("archive %s: config: %v", archivePath, err)
	}
	r.manifest, err = json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor("application/vnd.oci.image.config.v1+json", config),
		"layers":        layers,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.server.Close)
	return r
}

func (r *loopbackRegistry) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.requests = append(r.requests, req.Method+" "+req.URL.Path)
	r.mu.Unlock()
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		http.Error(w, "read-only registry", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	if req.URL.Path == "/v2/" || req.URL.Path == "/v2" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
		return
	}
	prefix := "/v2/" + r.repo + "/"
	rest, ok := strings.CutPrefix(req.URL.Path, prefix)
	if !ok {
		r.notFound(w, "NAME_UNKNOWN", "repository name not known to registry")
		return
	}
	kind, ref := path.Split(rest)
	switch kind {
	case "manifests/":
		if ref != r.tag && ref != sha256Digest(r.manifest) {
			r.notFound(w, "MANIFEST_UNKNOWN", "manifest unknown")
			return
		}
		r.write(w, req, "application/vnd.oci.image.manifest.v1+json", r.manifest)
	case "blobs/":
		blob, ok := r.blobs[ref]
		if !ok {
			r.notFound(w, "BLOB_UNKNOWN", "blob unknown to registry")
			return
		}
		r.write(w, req, "application/octet-stream", blob)
	default:
		r.notFound(w, "UNSUPPORTED", "unsupported")
	}
}

func (r *loopbackRegistry) write(w http.ResponseWriter, req *http.Request, mediaType string, data []byte) {
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Docker-Content-Digest", sha256Digest(data))
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	if req.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(data)
}

func (r *loopbackRegistry) notFound(w http.ResponseWriter, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"code": code, "message": message}}})
}

// trustPlainHTTP tells the node's containerd (through its certs.d, which it reads on every pull)
// that the registry speaks plain HTTP.
func (r *loopbackRegistry) trustPlainHTTP(t *testing.T, registryConfigDir string) {
	t.Helper()
	dir := filepath.Join(registryConfigDir, r.Host())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	hosts := fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n  skip_verify = true\n", r.server.URL, r.server.URL)
	if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(hosts), 0o644); err != nil {
		t.Fatal(err)
	}
}

// registryMarkerPath is the file, inside images the registry serves, that imported images lack.
const registryMarkerPath = "etc/served-by-registry"

// withFile returns the uncompressed layer tar with one more regular file.
func withFile(layer []byte, name string, data []byte) ([]byte, error) {
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read layer: %w", err)
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data))}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// withDiffIDs returns the image config with its rootfs.diff_ids replaced.
func withDiffIDs(config []byte, diffIDs []string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(config, &doc); err != nil {
		return nil, err
	}
	rootfs, ok := doc["rootfs"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("no rootfs")
	}
	rootfs["diff_ids"] = diffIDs
	return json.Marshal(doc)
}

func sha256Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func readTarEntries(archivePath string) (map[string][]byte, error) {
	f, err := os.Open(archivePath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return entries, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", archivePath, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("read %s: %s: %w", archivePath, h.Name, err)
		}
		entries[path.Clean(h.Name)] = data
	}
}
