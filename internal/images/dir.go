package images

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// DirSpec describes a single-layer image whose root filesystem is a directory
// on the host (assembled by a script, for example the conformance test images).
type DirSpec struct {
	// Tag is the image reference written into the archive's RepoTags.
	Tag string
	// Root is the directory that becomes the image's "/".
	Root string
	// Entrypoint and Cmd are the image's default entrypoint and command.
	Entrypoint []string
	Cmd        []string
	// User is the image's default user ("1234", "1234:1234"); empty is root.
	User string
	// Env is added after the default PATH; an entry "PATH=..." replaces it.
	Env []string
	// WorkingDir defaults to "/".
	WorkingDir string
}

// BuildDir writes a docker-archive for spec into out and returns its path.
// Every entry of the layer is owned by root with a fixed modification time and
// the entries are sorted, so the same tree always gives the same image ID;
// modes (setuid included), symlinks and hard-link-free regular files are kept.
func BuildDir(out string, spec DirSpec) (string, error) {
	if spec.Tag == "" {
		return "", errors.New("build image from dir: empty tag")
	}
	layer, err := dirLayer(spec.Root)
	if err != nil {
		return "", fmt.Errorf("build image %s from %s: %w", spec.Tag, spec.Root, err)
	}
	cfg := containerConfig{
		Env:        imageEnv(spec.Env),
		Entrypoint: spec.Entrypoint,
		Cmd:        spec.Cmd,
		User:       spec.User,
		WorkingDir: spec.WorkingDir,
	}
	if cfg.WorkingDir == "" {
		cfg.WorkingDir = "/"
	}
	archive, err := archiveWithConfig(spec.Tag, cfg, layer)
	if err != nil {
		return "", fmt.Errorf("build image %s: archive: %w", spec.Tag, err)
	}
	return writeArchive(out, spec.Tag, archive)
}

// imageEnv is the default PATH followed by env, where an explicit PATH wins.
func imageEnv(env []string) []string {
	out := []string{defaultPath}
	for _, e := range env {
		if len(e) >= 5 && e[:5] == "PATH=" {
			out[0] = e
			continue
		}
		out = append(out, e)
	}
	return out
}

// dirLayer tars the tree under root, sorted by path, owned by root.
func dirLayer(root string) ([]byte, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", root)
	}
	var names []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			names = append(names, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk: %w", err)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range names {
		if err := addPath(tw, root, p); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func addPath(tw *tar.Writer, root, p string) error {
	info, err := os.Lstat(p)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return err
	}
	rel = filepath.ToSlash(rel)
	link := ""
	if info.Mode()&fs.ModeSymlink != 0 {
		if link, err = os.Readlink(p); err != nil {
			return err
		}
	}
	h, err := tar.FileInfoHeader(info, link)
	if err != nil {
		return fmt.Errorf("header %s: %w", rel, err)
	}
	h.Name = rel
	if info.IsDir() {
		h.Name += "/"
	}
	h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
	h.ModTime, h.AccessTime, h.ChangeTime = epoch(), time.Time{}, time.Time{}
	h.PAXRecords = nil
	switch {
	case info.Mode().IsRegular(), info.IsDir(), info.Mode()&fs.ModeSymlink != 0:
	default:
		return fmt.Errorf("%s: unsupported file type %v", rel, info.Mode().Type())
	}
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("header %s: %w", rel, err)
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return nil
}
