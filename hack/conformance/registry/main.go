// Command registry serves the harness's image cache (docker-archives, as `docker save` and the
// harness's builds write them) read-only over the registry API (OCI distribution: manifests and
// blobs by tag and digest), so that the nodes' containerd pulls the cached images for real: the
// harness names it as the mirror of each registry the archives come from (a hosts.toml in each
// node's certs.d). Specs that pull with imagePullPolicy Always ("Container Runtime blackbox test
// ... should be able to pull image") then pull through the registry protocol without leaving the
// machine. Each image is served as an OCI manifest of its uncompressed layers (a layer's digest is
// then its diff ID, as the image config names it). Only the standard library: it adds nothing to
// skiff's go.mod.
//
// usage: go run ./hack/conformance/registry -listen ADDR [-hosts] DIR
//
// -hosts prints the registry hosts the archives in DIR name, one per line, and exits.
package main

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar"
)

// blob is a tar entry of an archive: served from the file at its offset.
type blob struct {
	path   string
	offset int64
	size   int64
}

// image is one tagged image: its manifest and its digest.
type image struct {
	manifest []byte
	digest   string
}

// store is every image of the archives, by "host/repository" and by reference (tag or
// manifest digest), and every blob by digest.
type store struct {
	images map[string]map[string]image
	blobs  map[string]blob
}

func main() {
	listen := flag.String("listen", "127.0.0.1:5000", "address to serve on")
	hostsOnly := flag.Bool("hosts", false, "print the registry hosts the archives name and exit")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: registry -listen ADDR [-hosts] DIR")
		os.Exit(2)
	}
	archives, err := filepath.Glob(filepath.Join(flag.Arg(0), "*.tar"))
	if err != nil {
		log.Fatal(err)
	}
	s, err := load(archives)
	if err != nil {
		log.Fatal(err)
	}
	if *hostsOnly {
		for _, h := range s.hosts() {
			fmt.Println(h)
		}
		return
	}
	log.Printf("serving %d repositories, %d blobs on %s", len(s.images), len(s.blobs), *listen)
	log.Fatal(http.ListenAndServe(*listen, s))
}

// archiveManifest is one entry of a docker-archive's manifest.json.
type archiveManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// load indexes the archives: each entry's digest and place, each tag's manifest.
func load(archives []string) (*store, error) {
	s := &store{images: map[string]map[string]image{}, blobs: map[string]blob{}}
	for _, path := range archives {
		if err := s.add(path); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return s, nil
}

// countingReader tells how far into the file tar.Reader has read: after Next, the entry's data
// starts there (tar entries are stored whole, block-aligned).
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (s *store) add(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	cr := &countingReader{r: f}
	tr := tar.NewReader(cr)
	entries := map[string]blob{}
	digests := map[string]string{}
	var manifests []archiveManifest
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		at := cr.n
		h := sha256.New()
		var body io.Writer = h
		var manifestJSON strings.Builder
		if hdr.Name == "manifest.json" {
			body = io.MultiWriter(h, &manifestJSON)
		}
		if _, err := io.Copy(body, tr); err != nil {
			return err
		}
		entries[hdr.Name] = blob{path: path, offset: at, size: hdr.Size}
		digests[hdr.Name] = "sha256:" + hex.EncodeToString(h.Sum(nil))
		if hdr.Name == "manifest.json" {
			if err := json.Unmarshal([]byte(manifestJSON.String()), &manifests); err != nil {
				return fmt.Errorf("manifest.json: %w", err)
			}
		}
	}
	if len(manifests) == 0 {
		return errors.New("no manifest.json: not a docker-archive")
	}
	for _, m := range manifests {
		if err := s.addImage(m, entries, digests); err != nil {
			return err
		}
	}
	return nil
}

// descriptor is an OCI content descriptor.
type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

func (s *store) addImage(m archiveManifest, entries map[string]blob, digests map[string]string) error {
	ref := func(name string) (descriptor, error) {
		b, ok := entries[name]
		if !ok {
			return descriptor{}, fmt.Errorf("manifest.json names %s, which the archive lacks", name)
		}
		s.blobs[digests[name]] = b
		return descriptor{Digest: digests[name], Size: b.size}, nil
	}
	config, err := ref(m.Config)
	if err != nil {
		return err
	}
	config.MediaType = mediaConfig
	var layers []descriptor
	for _, l := range m.Layers {
		d, err := ref(l)
		if err != nil {
			return err
		}
		d.MediaType = mediaLayer
		layers = append(layers, d)
	}
	manifest, err := json.Marshal(struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Config        descriptor   `json:"config"`
		Layers        []descriptor `json:"layers"`
	}{2, mediaManifest, config, layers})
	if err != nil {
		return err
	}
	sum := sha256.Sum256(manifest)
	img := image{manifest: manifest, digest: "sha256:" + hex.EncodeToString(sum[:])}
	for _, tag := range m.RepoTags {
		repo, t, ok := splitTag(tag)
		if !ok {
			return fmt.Errorf("tag %q: want host/repository:tag", tag)
		}
		if s.images[repo] == nil {
			s.images[repo] = map[string]image{}
		}
		s.images[repo][t] = img
		s.images[repo][img.digest] = img
	}
	return nil
}

// splitTag splits "host/repo/name:tag" into "host/repo/name" and "tag"; the host must be named.
func splitTag(ref string) (repo, tag string, ok bool) {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return "", "", false
	}
	repo, tag = ref[:i], ref[i+1:]
	host, _, found := strings.Cut(repo, "/")
	if !found || !strings.ContainsAny(host, ".:") && host != "localhost" {
		return "", "", false
	}
	return repo, tag, true
}

// hosts are the registries the archives' images come from.
func (s *store) hosts() []string {
	set := map[string]bool{}
	for repo := range s.images {
		host, _, _ := strings.Cut(repo, "/")
		set[host] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// ServeHTTP answers /v2/, /v2/<name>/manifests/<reference> and /v2/<name>/blobs/<digest> (GET
// and HEAD). A mirror request names the registry it stands in for in the ns query parameter
// (containerd's way); without it, the name is looked up under every host.
func (s *store) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "read-only registry", http.StatusMethodNotAllowed)
		return
	}
	p := strings.TrimPrefix(r.URL.Path, "/v2/")
	if p == r.URL.Path {
		http.NotFound(w, r)
		return
	}
	if p == "" {
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		w.WriteHeader(http.StatusOK)
		return
	}
	if name, reference, ok := strings.Cut(p, "/manifests/"); ok {
		s.serveManifest(w, r, name, reference)
		return
	}
	if _, digest, ok := strings.Cut(p, "/blobs/"); ok {
		s.serveBlob(w, r, digest)
		return
	}
	http.NotFound(w, r)
}

func (s *store) serveManifest(w http.ResponseWriter, r *http.Request, name, reference string) {
	var candidates []string
	if ns := r.URL.Query().Get("ns"); ns != "" {
		candidates = []string{ns + "/" + name}
	} else {
		for _, h := range s.hosts() {
			candidates = append(candidates, h+"/"+name)
		}
	}
	for _, repo := range candidates {
		img, ok := s.images[repo][reference]
		if !ok {
			continue
		}
		w.Header().Set("Content-Type", mediaManifest)
		w.Header().Set("Docker-Content-Digest", img.digest)
		w.Header().Set("Content-Length", strconv.Itoa(len(img.manifest)))
		if r.Method == http.MethodGet {
			_, _ = w.Write(img.manifest)
		}
		return
	}
	registryError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", fmt.Sprintf("no %s:%s here", name, reference))
}

func (s *store) serveBlob(w http.ResponseWriter, r *http.Request, digest string) {
	b, ok := s.blobs[digest]
	if !ok {
		registryError(w, http.StatusNotFound, "BLOB_UNKNOWN", "no blob "+digest)
		return
	}
	f, err := os.Open(b.path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Docker-Content-Digest", digest)
	// ServeContent answers HEAD, ranges (containerd resumes a broken download with one) and the
	// length.
	http.ServeContent(w, r, "", time.Time{}, io.NewSectionReader(f, b.offset, b.size))
}

func registryError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"code": code, "message": message}}})
}
