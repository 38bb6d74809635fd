package images

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"reflect"
	"testing"
)

// requireBusybox skips only on developer machines without busybox-static; in
// CI a missing binary is a failure.
func requireBusybox(t *testing.T) {
	t.Helper()
	if _, err := findBusybox(""); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("busybox-static not installed: %v", err)
		}
		t.Fatalf("busybox-static not installed in CI: %v", err)
	}
}

func readTar(t *testing.T, data []byte) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	headers, bodies := map[string]*tar.Header{}, map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return headers, bodies
		}
		if err != nil {
			t.Fatalf("read tar: %v", err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("read %s: %v", h.Name, err)
		}
		headers[h.Name], bodies[h.Name] = h, body
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	requireBusybox(t)
	first, err := BuildBusybox(t.TempDir(), BusyboxImage, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := BuildBusybox(t.TempDir(), BusyboxImage, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(first)
	b, _ := os.ReadFile(second)
	if !bytes.Equal(a, b) {
		t.Fatalf("two builds of the same image differ (%d vs %d bytes)", len(a), len(b))
	}
	pause, err := BuildPause(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	idBusybox, _ := ImageID(first)
	idPause, _ := ImageID(pause)
	if idBusybox == idPause {
		t.Fatalf("busybox and pause images share image ID %s although their Cmd differs", idBusybox)
	}
}

func TestBuildArchiveLayout(t *testing.T) {
	requireBusybox(t)
	cmd := []string{"/bin/httpd", "-f", "-p", "80"}
	path, err := BuildBusybox(t.TempDir(), "localhost/web:v1", cmd)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ArchiveName("localhost/web:v1"), "localhost_web_v1.tar"; got != want {
		t.Errorf("ArchiveName = %q, want %q", got, want)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, files := readTar(t, data)
	var manifest []manifestEntry
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(manifest) != 1 || !reflect.DeepEqual(manifest[0].RepoTags, []string{"localhost/web:v1"}) || len(manifest[0].Layers) != 1 {
		t.Fatalf("manifest = %+v", manifest)
	}
	cfgBytes := files[manifest[0].Config]
	cfgSum := sha256.Sum256(cfgBytes)
	id, err := ImageID(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "sha256:" + hex.EncodeToString(cfgSum[:]); id != want {
		t.Errorf("ImageID = %s, want sha256 of config %s", id, want)
	}
	var cfg imageConfig
	if err := json.Unmarshal(cfgBytes, &cfg); err != nil {
		t.Fatalf("config: %v", err)
	}
	if !reflect.DeepEqual(cfg.Config.Cmd, cmd) || cfg.OS != "linux" || len(cfg.Config.Env) != 1 {
		t.Errorf("config = %+v", cfg)
	}
	layer := files[manifest[0].Layers[0]]
	layerSum := sha256.Sum256(layer)
	if want := "sha256:" + hex.EncodeToString(layerSum[:]); !reflect.DeepEqual(cfg.RootFS.DiffIDs, []string{want}) {
		t.Errorf("diff_ids = %v, want [%s]", cfg.RootFS.DiffIDs, want)
	}

	headers, bodies := readTar(t, layer)
	tests := []struct {
		name     string
		typeflag byte
		mode     int64
		link     string
	}{
		{"bin/busybox", tar.TypeReg, 0o755, ""},
		{"bin/sh", tar.TypeSymlink, 0o777, "/bin/busybox"},
		{"bin/httpd", tar.TypeSymlink, 0o777, "/bin/busybox"},
		{"usr/bin/env", tar.TypeSymlink, 0o777, "/bin/busybox"},
		{"tmp/", tar.TypeDir, 0o1777, ""},
		{"etc/passwd", tar.TypeReg, 0o644, ""},
		{"etc/group", tar.TypeReg, 0o644, ""},
	}
	for _, tc := range tests {
		h, ok := headers[tc.name]
		if !ok {
			if tc.name == "bin/httpd" {
				if _, alt := headers["usr/sbin/httpd"]; alt {
					continue
				}
			}
			t.Errorf("layer lacks %s", tc.name)
			continue
		}
		if h.Typeflag != tc.typeflag || h.Mode != tc.mode || h.Linkname != tc.link || h.Uid != 0 || h.Gid != 0 || h.ModTime.Unix() != 0 {
			t.Errorf("%s: type %c mode %o link %q uid %d gid %d mtime %v", tc.name, h.Typeflag, h.Mode, h.Linkname, h.Uid, h.Gid, h.ModTime)
		}
	}
	if !bytes.HasPrefix(bodies["etc/passwd"], []byte("root:x:0:0:")) {
		t.Errorf("etc/passwd = %q", bodies["etc/passwd"])
	}
}

func TestBuildRejectsBadInput(t *testing.T) {
	if _, err := Build(t.TempDir(), Spec{}); err == nil {
		t.Error("Build with empty tag succeeded")
	}
	if _, err := Build(t.TempDir(), Spec{Tag: "x", Busybox: "/nonexistent/busybox"}); err == nil {
		t.Error("Build with missing busybox succeeded")
	}
	if err := Import(t.Context(), "/nonexistent.sock", "/nonexistent.tar"); err == nil {
		t.Error("Import of a missing file succeeded")
	}
}
