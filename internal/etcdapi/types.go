package etcdapi

// Paths of the membership endpoints. Member IDs are written in hexadecimal, as etcdctl prints them.
const (
	// MembersPath: GET lists the members with their status, POST adds a learner (AddMemberRequest).
	MembersPath = "/skiff/v1/etcd/members"
	// PromoteSuffix after MembersPath/<id> promotes a learner: POST MembersPath/<id>/promote.
	PromoteSuffix = "/promote"
)

// Member is one etcd member as the API server sees it.
type Member struct {
	// ID is the member ID in hexadecimal.
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs,omitempty"`
	IsLearner  bool     `json:"isLearner,omitempty"`
	// The fields below come from the member's own status; Healthy is false when it did not answer
	// (Error says why) or answers without a leader.
	IsLeader bool `json:"isLeader,omitempty"`
	// Reachable: the member answered its status call (with or without a leader).
	Reachable bool   `json:"reachable"`
	Healthy   bool   `json:"healthy"`
	RaftIndex uint64 `json:"raftIndex,omitempty"`
	RaftTerm  uint64 `json:"raftTerm,omitempty"`
	DBSize    int64  `json:"dbSize,omitempty"`
	Version   string `json:"version,omitempty"`
	Error     string `json:"error,omitempty"`
}

// MemberList is the answer of GET MembersPath.
type MemberList struct {
	Members []Member `json:"members"`
	// LeaderID is the leader's ID in hexadecimal, empty without a leader.
	LeaderID string `json:"leaderID,omitempty"`
	// Quorum is false when fewer than a majority of the voting members are healthy.
	Quorum bool `json:"quorum"`
	// Alarms are conditions that refuse writes beyond etcd's own alarms (which members report in
	// their Error): the answering API server's disk fence ("NOSPACE: ...").
	Alarms []string `json:"alarms,omitempty"`
}

// AddMemberRequest asks for a new learner member.
type AddMemberRequest struct {
	// Name is the name the new member will start with (its node name).
	Name     string   `json:"name"`
	PeerURLs []string `json:"peerURLs"`
}

// AddMemberResponse tells the new member how to start: etcd's --initial-cluster and
// --initial-cluster-state existing.
type AddMemberResponse struct {
	Member         Member `json:"member"`
	InitialCluster string `json:"initialCluster"`
	// ClientURLs of the existing members, for the new member's first client connection.
	ClientURLs []string `json:"clientURLs,omitempty"`
}
