package etcdsnapshot

import (
	"cmp"
	"slices"
)

// Listing is one snapshot as `skiff etcd snapshot ls` shows it: from this node's directory, the
// API's index, or both.
type Listing struct {
	Snapshot
	// Local: the file is in this node's snapshot directory. Recorded: the index lists it (it may
	// be on another node's disk).
	Local, Recorded bool
}

// Merge joins the files of this node's directory with the API's index by name: a file's own
// size and checksum win, the index adds what only etcd knew (revision, keys) and the snapshots
// other nodes hold. Oldest first.
func Merge(local, recorded []Snapshot) []Listing {
	byName := map[string]*Listing{}
	var out []*Listing
	for _, s := range local {
		l := &Listing{Snapshot: s, Local: true}
		byName[s.Name] = l
		out = append(out, l)
	}
	for _, r := range recorded {
		if l, ok := byName[r.Name]; ok {
			l.Recorded = true
			l.Revision, l.Keys = r.Revision, r.Keys
			if l.Node == "" {
				l.Node = r.Node
			}
			continue
		}
		l := &Listing{Snapshot: r, Recorded: true}
		byName[r.Name] = l
		out = append(out, l)
	}
	res := make([]Listing, 0, len(out))
	for _, l := range out {
		res = append(res, *l)
	}
	slices.SortStableFunc(res, func(a, b Listing) int {
		return cmp.Or(a.Taken.Compare(b.Taken), cmp.Compare(a.Name, b.Name))
	})
	return res
}
