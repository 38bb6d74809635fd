package images

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

const (
	// BusyboxImage is the reference of the general-purpose test image.
	BusyboxImage = "localhost/busybox:local"
	// PauseImage is the reference of the image every pod sandbox runs.
	PauseImage = "localhost/pause:local"

	// defaultPath is the PATH baked into the images' config.
	defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// epoch is the modification time of every archive entry; a fixed value keeps
// the layer digest and therefore the image ID stable.
func epoch() time.Time { return time.Unix(0, 0).UTC() }

// PauseCommand is the pause image's Cmd: a process that sleeps until killed.
func PauseCommand() []string { return []string{"/bin/sleep", "inf"} }

// Spec describes one single-layer busybox image.
type Spec struct {
	// Tag is the image reference written into the archive's RepoTags.
	Tag string
	// Cmd is the image's default command; nil leaves it unset (a shell).
	Cmd []string
	// Busybox is the static busybox binary to embed; empty means the first of
	// /bin/busybox and /usr/bin/busybox that exists.
	Busybox string
}

// BuildBusybox writes a docker-archive of a busybox image tagged tag with
// default command cmd into dir and returns the archive's path.
func BuildBusybox(dir, tag string, cmd []string) (string, error) {
	return Build(dir, Spec{Tag: tag, Cmd: cmd})
}

// BuildPause writes the pause image archive (PauseImage) into dir.
func BuildPause(dir string) (string, error) {
	return BuildBusybox(dir, PauseImage, PauseCommand())
}

// ArchiveName is the file name Build gives the archive of an image reference.
func ArchiveName(tag string) string {
	return strings.NewReplacer("/", "_", ":", "_", "@", "_").Replace(tag) + ".tar"
}

// Build writes a docker-archive for spec into dir and returns its path.
func Build(dir string, spec Spec) (string, error) {
	if spec.Tag == "" {
		return "", errors.New("build image: empty tag")
	}
	busybox, err := findBusybox(spec.Busybox)
	if err != nil {
		return "", fmt.Errorf("build image %s: %w", spec.Tag, err)
	}
	applets, err := listApplets(busybox)
	if err != nil {
		return "", fmt.Errorf("build image %s: %w", spec.Tag, err)
	}
	binary, err := os.ReadFile(busybox)
	if err != nil {
		return "", fmt.Errorf("build image %s: read busybox: %w", spec.Tag, err)
	}
	layer, err := buildLayer(binary, applets)
	if err != nil {
		return "", fmt.Errorf("build image %s: layer: %w", spec.Tag, err)
	}
	archive, err := buildArchive(spec, layer)
	if err != nil {
		return "", fmt.Errorf("build image %s: archive: %w", spec.Tag, err)
	}
	return writeArchive(dir, spec.Tag, archive)
}

// writeArchive writes archive as dir/ArchiveName(tag), atomically.
func writeArchive(dir, tag string, archive []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("build image %s: %w", tag, err)
	}
	out := filepath.Join(dir, ArchiveName(tag))
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, archive, 0o644); err != nil {
		return "", fmt.Errorf("build image %s: write: %w", tag, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", fmt.Errorf("build image %s: %w", tag, err)
	}
	return out, nil
}

func findBusybox(explicit string) (string, error) {
	candidates := []string{"/bin/busybox", "/usr/bin/busybox"}
	if explicit != "" {
		candidates = []string{explicit}
	}
	for _, c := range candidates {
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
			return c, nil
		}
	}
	return "", fmt.Errorf("busybox binary not found in %v (install busybox-static)", candidates)
}

// listApplets returns the applets' install paths relative to / (for example
// "usr/bin/env"), sorted, without busybox itself.
func listApplets(busybox string) ([]string, error) {
	out, err := exec.Command(busybox, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list-full: %w", busybox, err)
	}
	seen := map[string]bool{}
	var applets []string
	for _, line := range strings.Split(string(out), "\n") {
		p := strings.Trim(strings.TrimSpace(line), "/")
		if p == "" || p == "bin/busybox" || seen[p] || strings.Contains(p, "..") {
			continue
		}
		seen[p] = true
		applets = append(applets, p)
	}
	if len(applets) == 0 {
		return nil, fmt.Errorf("%s lists no applets", busybox)
	}
	sort.Strings(applets)
	return applets, nil
}

type layerEntry struct {
	header tar.Header
	body   []byte
}

// buildLayer returns the uncompressed layer tar: the root filesystem.
func buildLayer(busybox []byte, applets []string) ([]byte, error) {
	entries := map[string]layerEntry{}
	dir := func(name string, mode int64) {
		entries[name+"/"] = layerEntry{header: tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode}}
	}
	file := func(name string, mode int64, body []byte) {
		entries[name] = layerEntry{header: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(body))}, body: body}
	}
	for _, d := range []string{"bin", "dev", "etc", "home", "proc", "root", "sbin", "sys", "usr", "usr/bin", "usr/sbin", "var", "var/run", "run"} {
		dir(d, 0o755)
	}
	dir("tmp", 0o1777)
	dir("root", 0o700)
	file("bin/busybox", 0o755, busybox)
	file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n"))
	file("etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n"))
	file("etc/hostname", 0o644, []byte("busybox\n"))
	for _, a := range applets {
		for parent := path.Dir(a); parent != "."; parent = path.Dir(parent) {
			if _, ok := entries[parent+"/"]; !ok {
				dir(parent, 0o755)
			}
		}
		entries[a] = layerEntry{header: tar.Header{Typeflag: tar.TypeSymlink, Name: a, Linkname: "/bin/busybox", Mode: 0o777}}
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		e := entries[n]
		h := e.header
		h.ModTime, h.Uid, h.Gid, h.Format = epoch(), 0, 0, tar.FormatUSTAR
		if err := tw.WriteHeader(&h); err != nil {
			return nil, fmt.Errorf("header %s: %w", n, err)
		}
		if len(e.body) > 0 {
			if _, err := tw.Write(e.body); err != nil {
				return nil, fmt.Errorf("write %s: %w", n, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type imageConfig struct {
	Architecture string          `json:"architecture"`
	OS           string          `json:"os"`
	Config       containerConfig `json:"config"`
	RootFS       rootFS          `json:"rootfs"`
}

type containerConfig struct {
	User       string   `json:"User,omitempty"`
	Env        []string `json:"Env"`
	Entrypoint []string `json:"Entrypoint,omitempty"`
	Cmd        []string `json:"Cmd,omitempty"`
	WorkingDir string   `json:"WorkingDir,omitempty"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type manifestEntry struct {
	Config   string   `json:"Config"`
	RepoTags []string `json:"RepoTags"`
	Layers   []string `json:"Layers"`
}

// buildArchive wraps the layer into a docker-archive (docker save format).
func buildArchive(spec Spec, layer []byte) ([]byte, error) {
	return archiveWithConfig(spec.Tag, containerConfig{Env: []string{defaultPath}, Cmd: spec.Cmd, WorkingDir: "/"}, layer)
}

// archiveWithConfig wraps the layer into a docker-archive tagged tag whose
// image runs with container config cc.
func archiveWithConfig(tag string, cc containerConfig, layer []byte) ([]byte, error) {
	layerSum := sha256.Sum256(layer)
	layerHex := hex.EncodeToString(layerSum[:])
	cfg := imageConfig{
		Architecture: runtime.GOARCH,
		OS:           "linux",
		Config:       cc,
		RootFS:       rootFS{Type: "layers", DiffIDs: []string{"sha256:" + layerHex}},
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	cfgSum := sha256.Sum256(cfgJSON)
	cfgName := hex.EncodeToString(cfgSum[:]) + ".json"
	layerName := layerHex + "/layer.tar"
	manifest, err := json.Marshal([]manifestEntry{{Config: cfgName, RepoTags: []string{tag}, Layers: []string{layerName}}})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	write := func(h tar.Header, body []byte) error {
		h.ModTime, h.Format = epoch(), tar.FormatUSTAR
		if err := tw.WriteHeader(&h); err != nil {
			return fmt.Errorf("header %s: %w", h.Name, err)
		}
		_, err := io.Copy(tw, bytes.NewReader(body))
		return err
	}
	for _, e := range []struct {
		h    tar.Header
		body []byte
	}{
		{tar.Header{Typeflag: tar.TypeDir, Name: layerHex + "/", Mode: 0o755}, nil},
		{tar.Header{Typeflag: tar.TypeReg, Name: layerName, Mode: 0o644, Size: int64(len(layer))}, layer},
		{tar.Header{Typeflag: tar.TypeReg, Name: cfgName, Mode: 0o644, Size: int64(len(cfgJSON))}, cfgJSON},
		{tar.Header{Typeflag: tar.TypeReg, Name: "manifest.json", Mode: 0o644, Size: int64(len(manifest))}, manifest},
	} {
		if err := write(e.h, e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ImageID returns the image ID ("sha256:<hex of the config>") of a
// docker-archive written by Build, which is what the runtime reports once the
// archive is imported.
func ImageID(archive string) (string, error) {
	f, err := os.Open(archive)
	if err != nil {
		return "", fmt.Errorf("image id: %w", err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("image id: %s has no manifest.json", archive)
		}
		if err != nil {
			return "", fmt.Errorf("image id: read %s: %w", archive, err)
		}
		if h.Name != "manifest.json" {
			continue
		}
		var m []manifestEntry
		if err := json.NewDecoder(tr).Decode(&m); err != nil {
			return "", fmt.Errorf("image id: manifest of %s: %w", archive, err)
		}
		if len(m) == 0 {
			return "", fmt.Errorf("image id: empty manifest in %s", archive)
		}
		return "sha256:" + strings.TrimSuffix(path.Base(m[0].Config), ".json"), nil
	}
}
