package etcd

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"
)

func TestDecideElection(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   electionState
		want electionAction
	}{
		{"alone, log applied: campaign", electionState{members: 1, raftKnown: true, applied: 7, committed: 7}, electionCampaign},
		{"alone, recovered entries unapplied: wait", electionState{members: 1, raftKnown: true, applied: 5, committed: 7}, electionWait},
		{"alone, raft's indexes unknown: its timer's", electionState{members: 1}, electionDone},
		{"alone with a leader: done", electionState{members: 1, hasLeader: true, raftKnown: true, applied: 7, committed: 7}, electionDone},
		{"with peers: raft's own", electionState{members: 3, raftKnown: true, applied: 7, committed: 7}, electionDone},
		{"with a learner: raft's own", electionState{members: 2, raftKnown: true, applied: 7, committed: 7}, electionDone},
		{"membership not yet known: raft's own", electionState{raftKnown: true}, electionDone},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideElection(tt.in); got != tt.want {
				t.Fatalf("decideElection(%+v) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// raftProgress reads this member's raft, and nobody else's.
func TestRaftProgressIsTheMembersOwn(t *testing.T) {
	m := startTestMember(t)
	id := m.current().Server.MemberID()
	deadline := time.Now().Add(10 * time.Second)
	for {
		applied, committed, ok := raftProgress(id)
		if ok && committed > 0 && applied == committed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("raftProgress(%s) = %d, %d, %v; want the applied log of a serving member", id, applied, committed, ok)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, _, ok := raftProgress(id + 1); ok {
		t.Fatalf("raftProgress of another member's id is known")
	}
}

// startTestMember starts a one-member cluster in a temp dir, ready, until the test ends.
func startTestMember(t *testing.T) *Member {
	t.Helper()
	url := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return "http://" + l.Addr().String()
	}
	m, err := Start(context.Background(), Config{
		DataDir:          filepath.Join(t.TempDir(), "etcd"),
		ListenClientURLs: []string{url()},
		ListenPeerURLs:   []string{url()},
		LogLevel:         "error",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	select {
	case <-m.Ready():
	case <-m.Failed():
		t.Fatalf("member failed: %v", m.Err())
	}
	return m
}
