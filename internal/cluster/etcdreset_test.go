package cluster

import (
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/etcdapi"
)

func TestPlanClusterReset(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 5, 0, time.UTC)
	aside := "/var/lib/skiff/etcd-old-20260301T120005Z"
	for _, tc := range []struct {
		name       string
		etcdExists bool
		prev       *clusterResetRecord
		want       clusterResetPlan
	}{
		{name: "wiped data dir: restore, nothing to move", want: clusterResetPlan{}},
		{name: "old data: moved aside, never deleted", etcdExists: true, want: clusterResetPlan{MoveAside: aside}},
		{name: "restarted with the flags still on: the data written since stays", etcdExists: true, prev: &clusterResetRecord{SHA256: "s1"}, want: clusterResetPlan{Skip: true}},
		{name: "another snapshot: a new reset", etcdExists: true, prev: &clusterResetRecord{SHA256: "s0"}, want: clusterResetPlan{MoveAside: aside}},
		{name: "reset before but data gone since: restore again", prev: &clusterResetRecord{SHA256: "s1"}, want: clusterResetPlan{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := planClusterReset("/var/lib/skiff", tc.etcdExists, tc.prev, "s1", now); got != tc.want {
				t.Fatalf("plan %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestMemberRemoved(t *testing.T) {
	members := []etcdapi.Member{
		{Name: "cp-1", PeerURLs: []string{"https://10.0.0.1:2380"}},
		{Name: "", PeerURLs: []string{"https://10.0.0.2:2380"}, IsLearner: true}, // added, not started
	}
	for _, tc := range []struct {
		name, member, peer string
		removed            bool
	}{
		{name: "listed by name", member: "cp-1", peer: "https://10.0.0.1:2380"},
		{name: "added but not started: listed by peer URL", member: "cp-2", peer: "https://10.0.0.2:2380"},
		{name: "reset away", member: "cp-3", peer: "https://10.0.0.3:2380", removed: true},
	} {
		if got := memberRemoved(members, tc.member, tc.peer); got != tc.removed {
			t.Errorf("%s: removed = %v, want %v", tc.name, got, tc.removed)
		}
	}
}
