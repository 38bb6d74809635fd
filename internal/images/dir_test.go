package images

import (
	"archive/tar"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func writeTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755))
	must(os.WriteFile(filepath.Join(root, "usr/bin/tool"), []byte("#!/bin/sh\n"), 0o755))
	must(os.Chmod(filepath.Join(root, "usr/bin/tool"), os.ModeSetuid|0o755))
	must(os.WriteFile(filepath.Join(root, "etc-data"), []byte("x"), 0o600))
	must(os.Symlink("/usr/bin/tool", filepath.Join(root, "tool")))
	return root
}

func TestBuildDirLayerAndConfig(t *testing.T) {
	root := writeTree(t)
	out, err := BuildDir(t.TempDir(), DirSpec{
		Tag: "example.test/img:1", Root: root,
		Entrypoint: []string{"/usr/bin/tool"}, Cmd: []string{"pause"}, User: "1234", Env: []string{"A=b"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(out) != ArchiveName("example.test/img:1") {
		t.Errorf("archive name %s", out)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	_, bodies := readTar(t, data)
	var manifest []manifestEntry
	if err := json.Unmarshal(bodies["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest: %v %s", err, bodies["manifest.json"])
	}
	if !reflect.DeepEqual(manifest[0].RepoTags, []string{"example.test/img:1"}) {
		t.Errorf("RepoTags = %v", manifest[0].RepoTags)
	}
	var cfg imageConfig
	if err := json.Unmarshal(bodies[manifest[0].Config], &cfg); err != nil {
		t.Fatal(err)
	}
	want := containerConfig{User: "1234", Env: []string{defaultPath, "A=b"}, Entrypoint: []string{"/usr/bin/tool"}, Cmd: []string{"pause"}, WorkingDir: "/"}
	if !reflect.DeepEqual(cfg.Config, want) {
		t.Errorf("config = %+v, want %+v", cfg.Config, want)
	}
	headers, layerBodies := readTar(t, bodies[manifest[0].Layers[0]])
	tool := headers["usr/bin/tool"]
	if tool == nil || tool.Mode&0o7777 != 0o4755 || tool.Uid != 0 || string(layerBodies["usr/bin/tool"]) != "#!/bin/sh\n" {
		t.Errorf("usr/bin/tool = %+v", tool)
	}
	if h := headers["tool"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "/usr/bin/tool" {
		t.Errorf("symlink tool = %+v", h)
	}
	if h := headers["usr/"]; h == nil || h.Typeflag != tar.TypeDir {
		t.Errorf("dir usr/ = %+v", h)
	}
	if h := headers["etc-data"]; h == nil || h.Mode&0o777 != 0o600 {
		t.Errorf("etc-data = %+v", h)
	}
}

func TestBuildDirIsDeterministic(t *testing.T) {
	spec := DirSpec{Tag: "example.test/img:1", Root: writeTree(t)}
	first, err := BuildDir(t.TempDir(), spec)
	if err != nil {
		t.Fatal(err)
	}
	spec.Root = writeTree(t) // same content, other inode times
	second, err := BuildDir(t.TempDir(), spec)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := ImageID(first)
	b, _ := ImageID(second)
	if a == "" || a != b {
		t.Errorf("image IDs differ for the same tree: %s vs %s", a, b)
	}
}

func TestBuildDirRejectsMissingRoot(t *testing.T) {
	if _, err := BuildDir(t.TempDir(), DirSpec{Tag: "x:1", Root: filepath.Join(t.TempDir(), "none")}); err == nil {
		t.Fatal("want an error for a missing root")
	}
}

func TestImageEnv(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
	}{
		{nil, []string{defaultPath}},
		{[]string{"A=1"}, []string{defaultPath, "A=1"}},
		{[]string{"PATH=/x", "B=2"}, []string{"PATH=/x", "B=2"}},
	} {
		if got := imageEnv(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("imageEnv(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
