package kubelet

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestResolveSubPath: a subPath is followed inside its volume, links included, and refused when it
// leaves it; a missing one is made with the volume root's mode, setgid and all, whatever the umask.
func TestResolveSubPath(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "vol")
	outside := filepath.Join(base, "node")
	for _, d := range []string{root + "/data/..2026", outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(root+"/data/..2026/key", []byte("v"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		root + "/data/..data": "..2026",         // an atomic volume's generation
		root + "/data/key":    "..data/key",     // and its file
		root + "/escape":      outside,          // a container's link to the node
		root + "/up":          "../node",        // the same, relative
		root + "/data/loop":   "../data/..data", // inside, through the root
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(root, 0o777|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		subPath string
		want    string // relative to root; "" when refused
		refusal string
	}{
		{subPath: "data/key", want: "data/..2026/key"},
		{subPath: "data/loop/key", want: "data/..2026/key"},
		{subPath: "new/deeper", want: "new/deeper"},
		{subPath: "./data/../data/..data", want: "data/..2026"},
		{subPath: "escape", refusal: "links outside the volume"},
		{subPath: "escape/made-on-the-node", refusal: "links outside the volume"},
		{subPath: "up", refusal: "links outside the volume"},
		{subPath: "../node", refusal: "must be a relative path inside the volume"},
		{subPath: "/etc", refusal: "must be a relative path inside the volume"},
	} {
		got, err := resolveSubPath(root, tc.subPath)
		if tc.refusal != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refusal) {
				t.Errorf("%s: %q, %v; want refused: %s", tc.subPath, got, err, tc.refusal)
			}
			continue
		}
		if err != nil || got != filepath.Join(root, tc.want) {
			t.Errorf("%s: %q, %v; want %s", tc.subPath, got, err, filepath.Join(root, tc.want))
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "made-on-the-node")); !os.IsNotExist(err) {
		t.Errorf("a directory was made outside the volume: %v", err)
	}
	info, err := os.Stat(filepath.Join(root, "new/deeper"))
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode() & (fs.ModePerm | fs.ModeSetgid); mode != 0o777|fs.ModeSetgid {
		t.Errorf("made subPath mode %v, want the volume root's %v", mode, 0o777|fs.ModeSetgid)
	}
}

// TestTmpfsSubPathIsSticky: a memory-backed emptyDir's root is 1777, as upstream's (tmpfs with
// no mode), and a subPath made in it takes that mode, sticky bit included.
func TestTmpfsSubPathIsSticky(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := mountTmpfs(dir, nil); err != nil {
		t.Skipf("no tmpfs here: %v", err)
	}
	defer func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) }()
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode() & (fs.ModePerm | fs.ModeSticky); mode != 0o777|fs.ModeSticky {
		t.Fatalf("tmpfs root mode %v, want 1777", mode)
	}
	made, err := resolveSubPath(dir, "sub")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(made); err != nil || info.Mode()&(fs.ModePerm|fs.ModeSticky) != 0o777|fs.ModeSticky {
		t.Errorf("subPath mode %v (%v), want 1777", info.Mode(), err)
	}
}
