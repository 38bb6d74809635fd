package watchcache

import (
	"testing"

	"github.com/skiff-sh/skiff/internal/storage"
)

func TestPlanList(t *testing.T) {
	const prefix = "/registry/core/pods/"
	token, err := storage.EncodeContinue(prefix+"ns/b\x00", prefix, 42)
	if err != nil {
		t.Fatal(err)
	}
	latestToken, err := storage.EncodeContinue(prefix+"ns/b\x00", prefix, -1)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		opts     storage.ListOptions
		source   listSource
		rev      int64
		startKey string
	}{
		{"consistent", storage.ListOptions{Recursive: true}, fromLatest, 0, prefix},
		{"single key", storage.ListOptions{}, fromStore, 0, prefix},
		{"match without rv", storage.ListOptions{Recursive: true, ResourceVersionMatch: "Exact"}, fromStore, 0, prefix},
		{"any", storage.ListOptions{Recursive: true, ResourceVersion: "0"}, fromAny, 0, prefix},
		{"any not older", storage.ListOptions{Recursive: true, ResourceVersion: "0", ResourceVersionMatch: "NotOlderThan"}, fromAny, 0, prefix},
		{"any exact", storage.ListOptions{Recursive: true, ResourceVersion: "0", ResourceVersionMatch: "Exact"}, fromStore, 0, prefix},
		{"exact", storage.ListOptions{Recursive: true, ResourceVersion: "7", ResourceVersionMatch: "Exact"}, fromRevision, 7, prefix},
		{"not older", storage.ListOptions{Recursive: true, ResourceVersion: "7", ResourceVersionMatch: "NotOlderThan"}, fromNotOlder, 7, prefix},
		{"legacy rv", storage.ListOptions{Recursive: true, ResourceVersion: "7"}, fromNotOlder, 7, prefix},
		{"legacy rv with limit", storage.ListOptions{Recursive: true, ResourceVersion: "7", Predicate: storage.Predicate{Limit: 5}}, fromStore, 0, prefix},
		{"bad rv", storage.ListOptions{Recursive: true, ResourceVersion: "x"}, fromStore, 0, prefix},
		{"unknown match", storage.ListOptions{Recursive: true, ResourceVersion: "7", ResourceVersionMatch: "Newest"}, fromStore, 0, prefix},
		{"continue", storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Limit: 2, Continue: token}}, fromRevision, 42, prefix + "ns/b\x00"},
		{"continue with rv 0", storage.ListOptions{Recursive: true, ResourceVersion: "0", Predicate: storage.Predicate{Continue: token}}, fromRevision, 42, prefix + "ns/b\x00"},
		{"continue with rv", storage.ListOptions{Recursive: true, ResourceVersion: "9", Predicate: storage.Predicate{Continue: token}}, fromStore, 0, prefix},
		{"continue at latest", storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Continue: latestToken}}, fromStore, 0, prefix},
		{"bad continue", storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Continue: "!!"}}, fromStore, 0, prefix},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := planList(prefix, tc.opts)
			if p.source != tc.source || p.rev != tc.rev || p.startKey != tc.startKey {
				t.Fatalf("plan = %+v, want source %d rev %d start %q", p, tc.source, tc.rev, tc.startKey)
			}
		})
	}
}
