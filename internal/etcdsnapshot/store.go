package etcdsnapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skiff-sh/skiff/internal/etcd"
)

// Snapshot is one snapshot as recorded: its file and what etcd said about it.
type Snapshot struct {
	Name     string    `json:"name"`
	Node     string    `json:"node"`
	Path     string    `json:"path"`
	Taken    time.Time `json:"taken"`
	Size     int64     `json:"size"`
	Revision int64     `json:"revision,omitempty"`
	Keys     int       `json:"keys,omitempty"`
	SHA256   string    `json:"sha256,omitempty"`
}

// Dir is a directory of snapshot files.
type Dir struct {
	Path string
}

// Scheduled lists the scheduler's snapshot files in the directory (none when it does not exist
// yet).
func (d Dir) Scheduled() ([]File, error) {
	entries, err := os.ReadDir(d.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list snapshots in %s: %w", d.Path, err)
	}
	var files []File
	for _, e := range entries {
		if f, ok := ParseName(e.Name()); ok && e.Type().IsRegular() {
			files = append(files, f)
		}
	}
	return files, nil
}

// All describes every snapshot file in the directory, scheduled or saved by hand (any *.db), with
// its size, modification time and the checksum its sidecar records.
func (d Dir) All() ([]Snapshot, error) {
	entries, err := os.ReadDir(d.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list snapshots in %s: %w", d.Path, err)
	}
	var out []Snapshot
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), Ext) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed while listing
		}
		s := Snapshot{Name: e.Name(), Path: filepath.Join(d.Path, e.Name()), Size: info.Size(), Taken: info.ModTime().UTC()}
		if f, ok := ParseName(e.Name()); ok {
			s.Node, s.Taken = f.Node, f.Taken
		}
		if sum, err := os.ReadFile(s.Path + ChecksumExt); err == nil {
			s.SHA256, _, _ = strings.Cut(strings.TrimSpace(string(sum)), " ")
		}
		out = append(out, s)
	}
	return out, nil
}

// Take saves a snapshot of the etcd member client reaches as name in the directory: etcd's save
// writes a temporary file, verifies it and renames it into place, then the sha256 sidecar is
// written the same way, so neither file is ever seen half-written.
func (d Dir) Take(ctx context.Context, client *clientv3.Client, name, node string, taken time.Time, log *slog.Logger) (Snapshot, error) {
	if err := os.MkdirAll(d.Path, 0o700); err != nil {
		return Snapshot{}, fmt.Errorf("create snapshot dir: %w", err)
	}
	path := filepath.Join(d.Path, name)
	st, err := etcd.SaveSnapshot(ctx, client, path, log)
	if err != nil {
		return Snapshot{}, err
	}
	sum, err := FileSHA256(path)
	if err != nil {
		return Snapshot{}, err
	}
	info, err := os.Stat(path)
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: %w", name, err)
	}
	if err := writeAtomic(path+ChecksumExt, []byte(sum+"  "+name+"\n")); err != nil {
		return Snapshot{}, fmt.Errorf("write checksum of %s: %w", name, err)
	}
	return Snapshot{Name: name, Node: node, Path: path, Taken: taken.UTC(), Size: info.Size(), Revision: st.Revision, Keys: st.TotalKeys, SHA256: sum}, nil
}

// Remove deletes a scheduled snapshot and its checksum; it refuses any other file.
func (d Dir) Remove(name string) error {
	if _, ok := ParseName(name); !ok || filepath.Base(name) != name {
		return fmt.Errorf("%s is not a scheduled snapshot; only those are pruned", name)
	}
	path := filepath.Join(d.Path, name)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("prune snapshot %s: %w", name, err)
	}
	if err := os.Remove(path + ChecksumExt); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("prune checksum of %s: %w", name, err)
	}
	return nil
}

// VerifyChecksum checks a snapshot file against its sidecar; a file without one passes (saved by
// hand, or by an older skiff).
func VerifyChecksum(path string) error {
	want, err := os.ReadFile(path + ChecksumExt)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read checksum of %s: %w", path, err)
	}
	got, err := FileSHA256(path)
	if err != nil {
		return err
	}
	if w, _, _ := strings.Cut(strings.TrimSpace(string(want)), " "); w != got {
		return fmt.Errorf("snapshot %s: sha256 %s, its checksum file says %s", path, got, w)
	}
	return nil
}

// FileSHA256 is the hex sha256 of the file at path.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("checksum %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("checksum %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeAtomic writes data to a temporary file beside path, syncs it and renames it over path.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".part-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
