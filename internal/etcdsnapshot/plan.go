package etcdsnapshot

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Prefix starts the name of every snapshot the scheduler takes; retention only ever prunes files
// named this way, so a snapshot saved by hand (skiff etcd snapshot save) in the same directory is
// never removed.
const Prefix = "skiff-etcd-"

// Ext ends a snapshot file's name; ChecksumExt ends its sha256 sidecar (sha256sum's format).
const (
	Ext         = ".db"
	ChecksumExt = ".sha256"
)

// timeLayout is the UTC time in a snapshot's name: sortable, and free of ':' so the name is a
// valid ConfigMap key and file name everywhere.
const timeLayout = "20060102T150405Z"

// ParseSchedule parses --etcd-snapshot-schedule: standard five-field cron, six fields when the
// first is seconds, or a descriptor (@hourly, @daily, @every 15s).
func ParseSchedule(spec string) (cron.Schedule, error) {
	p := cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	s, err := p.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("--etcd-snapshot-schedule %q: %w", spec, err)
	}
	return s, nil
}

// File is one scheduled snapshot file, as its name says.
type File struct {
	// Name is the file's base name.
	Name string
	// Node is the node whose scheduler took it.
	Node string
	// Taken is when it was taken (second precision, from the name).
	Taken time.Time
}

// FileName is the name of the snapshot node takes at t.
func FileName(node string, t time.Time) string {
	return Prefix + node + "-" + t.UTC().Format(timeLayout) + Ext
}

// ParseName reads a scheduled snapshot's node and time from its file name; ok is false for any
// other file (a hand-made snapshot, a checksum, a half-written temporary file).
func ParseName(name string) (File, bool) {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return File{}, false
	}
	rest, ok = strings.CutSuffix(rest, Ext)
	if !ok {
		return File{}, false
	}
	i := strings.LastIndexByte(rest, '-')
	if i <= 0 {
		return File{}, false
	}
	t, err := time.Parse(timeLayout, rest[i+1:])
	if err != nil {
		return File{}, false
	}
	return File{Name: name, Node: rest[:i], Taken: t}, true
}

// Due decides whether a snapshot is due at now, given the last one taken (or, before any, when
// this node started to take them): one is due once the schedule's first time after last has
// come. Runs missed while no node led are not made up: one snapshot stands for all of them.
// next is when to look again.
func Due(s cron.Schedule, last, now time.Time) (due bool, next time.Time) {
	at := s.Next(last)
	if at.IsZero() {
		return false, time.Time{} // a schedule that never fires (e.g. 30 February)
	}
	if at.After(now) {
		return false, at
	}
	return true, s.Next(now)
}

// Last is the newest of files taken by node, or since when node has none newer: the time Due
// counts from, so a restarted or newly elected scheduler does not take a snapshot at once when
// one was taken on schedule already.
func Last(files []File, node string, since time.Time) time.Time {
	last := since
	for _, f := range files {
		if f.Node == node && f.Taken.After(last) {
			last = f.Taken
		}
	}
	return last
}

// Prune chooses the scheduled snapshots to remove so that retention remain: the newest are kept,
// ties broken by name so the choice is stable. retention below 1 keeps everything.
func Prune(files []File, retention int) []File {
	if retention < 1 || len(files) <= retention {
		return nil
	}
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b File) int {
		if c := b.Taken.Compare(a.Taken); c != 0 {
			return c
		}
		return strings.Compare(b.Name, a.Name)
	})
	return sorted[retention:]
}
