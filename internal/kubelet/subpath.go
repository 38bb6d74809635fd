package kubelet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// resolveSubPath is the host path a container's subPath mount of the volume at root binds: the
// subPath followed component by component, symlinks included (an atomic volume's files are
// links into its current generation), never leaving the volume. A container writes what it
// likes into a volume, a link to / among it, and the kubelet binds as root: a subPath through
// such a link would hand the container the node (kubernetes#60813). Missing directories are
// made as upstream's kubelet makes them, the last with the volume root's mode (umask aside,
// setgid and all), so that an fsGroup may write into a subPath the pod names before it exists.
//
// A container could still swap a checked directory for a link before the runtime binds it;
// upstream closes that by binding the opened file descriptor, which skiff does not yet.
func resolveSubPath(root, subPath string) (string, error) {
	clean := filepath.Clean(subPath)
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("subPath %q must be a relative path inside the volume", subPath)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("subPath %s: volume: %w", subPath, err)
	}
	info, err := os.Stat(realRoot)
	if err != nil {
		return "", fmt.Errorf("subPath %s: volume: %w", subPath, err)
	}
	perm := info.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSetuid | fs.ModeSticky)
	cur := realRoot
	made := false
	for _, part := range strings.Split(clean, string(filepath.Separator)) {
		if part == "." || part == "" {
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(next, perm.Perm()); err != nil && !errors.Is(err, fs.ErrExist) {
				return "", fmt.Errorf("subPath %s: %w", subPath, err)
			}
			made = true
		case err != nil:
			return "", fmt.Errorf("subPath %s: %w", subPath, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := filepath.EvalSymlinks(next)
			if err != nil {
				return "", fmt.Errorf("subPath %s: %w", subPath, err)
			}
			if !within(realRoot, target) {
				return "", fmt.Errorf("subPath %s: %s links outside the volume", subPath, part)
			}
			next = target
		}
		cur = next
	}
	if made {
		// Mkdir's mode passed the umask, and setgid comes from the parent only.
		if err := os.Chmod(cur, perm); err != nil {
			return "", fmt.Errorf("subPath %s: %w", subPath, err)
		}
	}
	return cur, nil
}

// within reports whether path is root or below it (both clean and symlink-free).
func within(root, path string) bool {
	return path == root || strings.HasPrefix(path, root+string(filepath.Separator))
}
