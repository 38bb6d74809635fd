package manifests

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxFileSize bounds a manifest file: the objects must fit in etcd (1.5 MiB each) anyway, and a
// stray archive dropped in the directory must not be read into memory whole.
const maxFileSize = 16 << 20

// ReadDir reads every manifest file under dir (IsManifest; hidden directories skipped) and parses
// it. A file that cannot be read is a refused File, not an error: the other files still apply. The
// error is for dir itself (missing, unreadable), when the caller must do nothing, since reading
// no files would prune every object.
func ReadDir(dir string) ([]File, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("manifests directory: %w", err)
	}
	var files []File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // a subdirectory that vanished or cannot be read: its files stay as they are next pass
		}
		rel, relErr := filepath.Rel(dir, p)
		if relErr != nil {
			return relErr
		}
		name := filepath.ToSlash(rel)
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !IsManifest(name) {
			return nil
		}
		files = append(files, readFile(p, name))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read manifests directory %s: %w", dir, err)
	}
	return files, nil
}

func readFile(p, name string) File {
	info, err := os.Stat(p)
	if err == nil && info.Size() > maxFileSize {
		err = fmt.Errorf("%d bytes, more than the %d a manifest file may have", info.Size(), maxFileSize)
	}
	if err == nil && !info.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	if err != nil {
		return File{Name: name, Err: err}
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return File{Name: name, Err: err}
	}
	return Parse(name, data)
}
