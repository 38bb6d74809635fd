package etcd

import (
	"context"
	"encoding/json"
	"expvar"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/types"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.etcd.io/raft/v3/raftpb"
)

// campaignEvery is how often a one-member cluster without a leader is looked at, and asked to
// campaign once the entries it recovered on a restart are applied (raft may not campaign with
// configuration changes pending), which takes the apply loop a few milliseconds.
const campaignEvery = 10 * time.Millisecond

// electionState is what decides whether to hurry a member's election.
type electionState struct {
	// members is how many members the cluster has, learners included.
	members int
	// hasLeader is whether the member knows a leader.
	hasLeader bool
	// raftKnown says whether applied and committed were read from this member's raft.
	raftKnown bool
	// applied and committed are the member's raft's own applied and committed indexes. raft
	// looks for membership changes among committed entries it has not applied before it
	// campaigns, and panics if etcd has meanwhile compacted them away, which etcd does as soon as
	// it has applied them, before raft hears so. Only raft's own applied index says the window
	// is closed; with no leader nothing new commits, so it stays closed until the election.
	applied, committed uint64
}

// electionAction is what to do about a member's election now.
type electionAction int

const (
	// electionWait: not yet; look again after campaignEvery.
	electionWait electionAction = iota
	// electionCampaign: ask raft to campaign now.
	electionCampaign
	// electionDone: a leader is known, or the election is not this member's alone to hold;
	// stop looking.
	electionDone
)

// decideElection says whether a member should campaign now. Only a cluster of one is hurried:
// it needs no vote but its own, so campaigning at once is what its election timer would do a
// randomized 100 ms to 1 s later (etcd fast-forwards all but one of the ticks of a one-member
// restart, and raft draws the timeout from one to two election timeouts). With peers the
// election, and pre-vote's protection of a stable leader, stay raft's own.
func decideElection(s electionState) electionAction {
	switch {
	case s.hasLeader:
		return electionDone
	case s.members != 1:
		return electionDone
	case !s.raftKnown:
		return electionDone
	case s.applied < s.committed:
		return electionWait
	default:
		return electionCampaign
	}
}

// hurryElection carries out decideElection on a running server: a campaign is a MsgTimeoutNow
// from the member to itself, raft's way to start an election at once (as a leadership
// transfer's target does). It reports whether to stop looking.
func hurryElection(s *etcdserver.EtcdServer) (done bool) {
	st := electionState{members: len(s.Cluster().Members()), hasLeader: s.Leader() != 0}
	st.applied, st.committed, st.raftKnown = raftProgress(s.MemberID())
	switch decideElection(st) {
	case electionDone:
		return true
	case electionCampaign:
		// The backend writes the applied index and its term only when it commits (every
		// 100 ms). A fresh member elected before that has the new leader's storage-version
		// monitor find no term and log an error; commit first so it finds one.
		s.Backend().ForceCommit()
		id := uint64(s.MemberID())
		_ = s.Process(context.Background(), &raftpb.Message{Type: raftpb.MsgTimeoutNow.Enum(), From: &id, To: &id})
	}
	return false
}

// electionHurry is the ticker of one member's hurryElection until it is done.
type electionHurry struct {
	s      *etcdserver.EtcdServer
	ticker *time.Ticker
}

func newElectionHurry(s *etcdserver.EtcdServer) *electionHurry {
	return &electionHurry{s: s, ticker: time.NewTicker(campaignEvery)}
}

// C fires when it is time to call Tick.
func (h *electionHurry) C() <-chan time.Time { return h.ticker.C }

// Tick hurries the election once; a settled election stops the ticker, whose channel then never
// fires again.
func (h *electionHurry) Tick() {
	if hurryElection(h.s) {
		h.ticker.Stop()
	}
}

// Stop stops the ticker.
func (h *electionHurry) Stop() { h.ticker.Stop() }

// raftProgress reads raft's applied and committed indexes for member id. etcd shows its raft's
// status only as the process-wide "raft.status" expvar (served at /debug/vars), of the member
// started last; ok is false when that is not member id (several members in one process, as in
// tests), and the election is then left to raft's timer.
func raftProgress(id types.ID) (applied, committed uint64, ok bool) {
	v := expvar.Get("raft.status")
	if v == nil {
		return 0, 0, false
	}
	var st struct {
		ID      string `json:"id"`
		Commit  uint64 `json:"commit"`
		Applied uint64 `json:"applied"`
	}
	if err := json.Unmarshal([]byte(v.String()), &st); err != nil || st.ID != id.String() {
		return 0, 0, false
	}
	return st.Applied, st.Commit, true
}
