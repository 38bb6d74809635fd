package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/etcdapi"
)

// Defaults of the membership operations.
const (
	// DefaultMemberStatusTimeout bounds the status call to each member when listing them.
	DefaultMemberStatusTimeout = 2 * time.Second
	// DefaultPromoteInterval is how often PromoteLearner retries while the learner catches up.
	DefaultPromoteInterval = 500 * time.Millisecond
	// confChangeAttemptTimeout bounds one membership change. Raft ignores a configuration change
	// proposed while another is still being applied (a second member asking to join, say), and
	// etcd answers the ignored one only when its caller gives up: an unbounded attempt would hold
	// a join for the caller's whole deadline. A change applies in milliseconds, so an attempt
	// still unanswered after this is retried.
	confChangeAttemptTimeout = 5 * time.Second
)

// FormatID writes a member ID as etcdctl does (hexadecimal).
func FormatID(id uint64) string { return strconv.FormatUint(id, 16) }

// ParseID reads a hexadecimal member ID.
func ParseID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 16, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("etcd member ID %q: want a non-zero hexadecimal number", s)
	}
	return id, nil
}

// ListMembers lists the cluster's members, asks each one for its status (leader, raft index, db
// size) and says whether a majority of the voting members is healthy. The member list is read
// serializably, so it answers without quorum too.
func ListMembers(ctx context.Context, c *clientv3.Client) (*etcdapi.MemberList, error) {
	resp, err := c.MemberList(ctx, clientv3.WithSerializable())
	if err != nil {
		return nil, fmt.Errorf("etcd member list: %w", err)
	}
	statuses := make([]memberStatus, len(resp.Members))
	var wg sync.WaitGroup
	for i, m := range resp.Members {
		if len(m.ClientURLs) == 0 {
			statuses[i] = memberStatus{err: errors.New("not started yet")}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, DefaultMemberStatusTimeout)
			defer cancel()
			st, err := c.Status(sctx, m.ClientURLs[0])
			statuses[i] = memberStatus{resp: st, err: err}
		}()
	}
	wg.Wait()
	return memberList(resp.Members, statuses), nil
}

type memberStatus struct {
	resp *clientv3.StatusResponse
	err  error
}

// memberList combines the member list with each member's status answer (pure).
func memberList(members []*etcdserverpb.Member, statuses []memberStatus) *etcdapi.MemberList {
	out := &etcdapi.MemberList{Members: make([]etcdapi.Member, 0, len(members))}
	var leader uint64
	for i, m := range members {
		em := etcdapi.Member{
			ID: FormatID(m.ID), Name: m.Name, IsLearner: m.IsLearner,
			PeerURLs: slices.Clone(m.PeerURLs), ClientURLs: slices.Clone(m.ClientURLs),
		}
		st := statuses[i]
		switch {
		case st.err != nil:
			em.Error = st.err.Error()
		case st.resp == nil:
			em.Error = "no status"
		default:
			em.Reachable = true
			em.RaftIndex, em.RaftTerm = st.resp.RaftIndex, st.resp.RaftTerm
			em.DBSize, em.Version = st.resp.DbSize, st.resp.Version
			if len(st.resp.Errors) > 0 {
				em.Error = strings.Join(st.resp.Errors, "; ")
			}
			if st.resp.Leader == 0 {
				em.Error = "no leader"
			} else {
				em.Healthy = len(st.resp.Errors) == 0
				em.IsLeader = st.resp.Leader == m.ID
				if leader == 0 || em.IsLeader {
					leader = st.resp.Leader
				}
			}
		}
		out.Members = append(out.Members, em)
	}
	if leader != 0 {
		out.LeaderID = FormatID(leader)
	}
	out.Quorum = HasQuorum(out.Members)
	return out
}

// HasQuorum reports whether more than half of the voting members (learners do not vote) are healthy.
func HasQuorum(members []etcdapi.Member) bool {
	voters, healthy := VoterCounts(members)
	return voters > 0 && healthy > voters/2
}

// VoterCounts counts the voting members and the healthy ones among them.
func VoterCounts(members []etcdapi.Member) (voters, healthy int) {
	for _, m := range members {
		if m.IsLearner {
			continue
		}
		voters++
		if m.Healthy {
			healthy++
		}
	}
	return voters, healthy
}

// reachableVoters counts the voting members that answered at all.
func reachableVoters(members []etcdapi.Member) int {
	n := 0
	for _, m := range members {
		if !m.IsLearner && m.Reachable {
			n++
		}
	}
	return n
}

// InitialCluster is the --initial-cluster a member added as newID under newName starts with:
// every member's name and peer URLs, the new one under newName (etcd lists it nameless until it
// starts). Members that never started (other pending learners) are left out, as etcd expects.
func InitialCluster(members []*etcdserverpb.Member, newID uint64, newName string) string {
	var parts []string
	for _, m := range members {
		name := m.Name
		if m.ID == newID {
			name = newName
		}
		if name == "" {
			continue
		}
		for _, u := range m.PeerURLs {
			parts = append(parts, name+"="+u)
		}
	}
	return strings.Join(parts, ",")
}

// AddLearner adds a learner member named name with peerURLs and returns how it must start. While
// etcd refuses with "unhealthy cluster" (a member added or promoted moments ago is not yet counted
// as connected) or "too many learner members" (etcd takes one learner at a time: members joining
// at once, as after a cluster reset, wait for the one before them to be promoted) it retries
// every interval until ctx ends.
func AddLearner(ctx context.Context, c *clientv3.Client, name string, peerURLs []string, clk clock.Clock, interval time.Duration, log *slog.Logger) (*etcdapi.AddMemberResponse, error) {
	if name == "" || len(peerURLs) == 0 {
		return nil, errors.New("add etcd learner: a name and peer URLs are required")
	}
	if _, err := parseURLs(peerURLs); err != nil {
		return nil, fmt.Errorf("add etcd learner %s: %w", name, err)
	}
	list, err := c.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("add etcd learner %s: list members: %w", name, err)
	}
	for _, m := range list.Members {
		if m.Name == name {
			return nil, fmt.Errorf("add etcd learner %s: a member of that name exists (ID %s): remove it first", name, FormatID(m.ID))
		}
	}
	if m := unstartedLearner(list.Members, peerURLs); m != nil {
		// Added before but never started (a join that failed half-way): answer that member
		// again, so a retried join starts it instead of failing on its peer URLs.
		log.Info("etcd learner was added before and never started; reusing it", "member", name, "id", FormatID(m.ID))
		return addResponse(list.Members, m, name), nil
	}
	if interval <= 0 {
		interval = DefaultPromoteInterval
	}
	var resp *clientv3.MemberAddResponse
	for {
		actx, cancel := context.WithTimeout(ctx, confChangeAttemptTimeout)
		resp, err = c.MemberAddAsLearner(actx, peerURLs)
		cancel()
		if err == nil {
			break
		}
		switch {
		case errors.Is(err, rpctypes.ErrUnhealthy):
			log.Debug("etcd refuses a new member while the cluster is settling; retrying", "member", name, "err", err)
		case errors.Is(err, rpctypes.ErrTooManyLearners):
			log.Info("etcd takes one learner at a time; waiting for the one it has to be promoted", "member", name)
		case attemptTimedOut(ctx, err):
			log.Info("etcd did not answer the new member in time (raft ignores a change made during another); retrying", "member", name)
		case errors.Is(err, rpctypes.ErrPeerURLExist):
			// An attempt that timed out may have been applied after all.
			if out, ok := learnerAddedBefore(ctx, c, name, peerURLs); ok {
				log.Info("etcd learner added", "member", name, "id", out.Member.ID, "peerURLs", peerURLs)
				return out, nil
			}
			return nil, fmt.Errorf("add etcd learner %s at %v: %w", name, peerURLs, err)
		default:
			return nil, fmt.Errorf("add etcd learner %s at %v: %w", name, peerURLs, err)
		}
		if err := sleep(ctx, clk, interval); err != nil {
			return nil, fmt.Errorf("add etcd learner %s at %v: cluster still unhealthy: %w", name, peerURLs, err)
		}
	}
	out := addResponse(resp.Members, resp.Member, name)
	log.Info("etcd learner added", "member", name, "id", out.Member.ID, "peerURLs", peerURLs)
	return out, nil
}

// unstartedLearner is the member of members with peerURLs that was added as a learner and never
// started (etcd learns a member's name when it starts), or nil (pure).
func unstartedLearner(members []*etcdserverpb.Member, peerURLs []string) *etcdserverpb.Member {
	for _, m := range members {
		if m.Name == "" && m.IsLearner && slices.Equal(m.PeerURLs, peerURLs) {
			return m
		}
	}
	return nil
}

// learnerAddedBefore answers the learner at peerURLs if an earlier attempt added it.
func learnerAddedBefore(ctx context.Context, c *clientv3.Client, name string, peerURLs []string) (*etcdapi.AddMemberResponse, bool) {
	list, err := c.MemberList(ctx)
	if err != nil {
		return nil, false
	}
	m := unstartedLearner(list.Members, peerURLs)
	if m == nil {
		return nil, false
	}
	return addResponse(list.Members, m, name), true
}

// attemptTimedOut says whether err ends one attempt bounded by confChangeAttemptTimeout while the
// caller's ctx still runs, so the change is worth asking again.
func attemptTimedOut(ctx context.Context, err error) bool {
	return ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, rpctypes.ErrTimeout))
}

// addResponse tells learner added (to be named name) how to start, from the member list (pure).
func addResponse(members []*etcdserverpb.Member, added *etcdserverpb.Member, name string) *etcdapi.AddMemberResponse {
	out := &etcdapi.AddMemberResponse{
		Member: etcdapi.Member{
			ID: FormatID(added.ID), Name: name, PeerURLs: slices.Clone(added.PeerURLs), IsLearner: true,
		},
		InitialCluster: InitialCluster(members, added.ID, name),
	}
	for _, m := range members {
		out.ClientURLs = append(out.ClientURLs, m.ClientURLs...)
	}
	return out
}

// PromoteLearner makes learner id a voting member, retrying every interval while etcd answers that
// the learner has not caught up with the leader yet, until ctx ends.
func PromoteLearner(ctx context.Context, c *clientv3.Client, id uint64, clk clock.Clock, interval time.Duration, log *slog.Logger) error {
	if interval <= 0 {
		interval = DefaultPromoteInterval
	}
	return changeMember(ctx, memberChange{
		id: id, verb: "promote", done: "etcd learner promoted", clk: clk, interval: interval, log: log,
		call: func(ctx context.Context) ([]*etcdserverpb.Member, error) {
			resp, err := c.MemberPromote(ctx, id)
			if err != nil {
				return nil, err
			}
			return resp.Members, nil
		},
		appliedErr: rpctypes.ErrMemberNotLearner,
		notYet: func(err error) bool {
			if !IsLearnerNotReady(err) {
				return false
			}
			log.Debug("etcd learner not in sync yet; retrying promotion", "id", FormatID(id))
			return true
		},
	})
}

// memberChange is one change to an existing member (promote, remove) for changeMember.
type memberChange struct {
	id         uint64
	verb, done string
	// call makes the change and answers the members after it.
	call func(context.Context) ([]*etcdserverpb.Member, error)
	// appliedErr is etcd's answer to the change once it is made: after an attempt that timed out,
	// that attempt was applied after all.
	appliedErr error
	// notYet says whether err is a refusal worth asking again after interval.
	notYet   func(error) bool
	clk      clock.Clock
	interval time.Duration
	log      *slog.Logger
}

// changeMember makes ch in attempts of at most confChangeAttemptTimeout, until ctx ends.
func changeMember(ctx context.Context, ch memberChange) error {
	timedOut := false
	for {
		actx, cancel := context.WithTimeout(ctx, confChangeAttemptTimeout)
		members, err := ch.call(actx)
		cancel()
		switch {
		case err == nil:
			ch.log.Info(ch.done, "id", FormatID(ch.id))
			warnEvenVoters(members, ch.log)
			return nil
		case timedOut && errors.Is(err, ch.appliedErr):
			ch.log.Info(ch.done, "id", FormatID(ch.id))
			return nil
		case attemptTimedOut(ctx, err):
			timedOut = true
			ch.log.Info("etcd did not answer a membership change in time (raft ignores a change made during another); retrying", "change", ch.verb, "id", FormatID(ch.id))
			continue
		case ch.notYet == nil || !ch.notYet(err):
			return fmt.Errorf("%s etcd member %s: %w", ch.verb, FormatID(ch.id), err)
		}
		if err := sleep(ctx, ch.clk, ch.interval); err != nil {
			return fmt.Errorf("%s etcd member %s: not ready for it in time: %w", ch.verb, FormatID(ch.id), err)
		}
	}
}

// sleep waits d on clk, or until ctx ends (its error).
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) error {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// IsLearnerNotReady reports etcd's "can only promote a learner member which is in sync with leader".
func IsLearnerNotReady(err error) bool {
	return errors.Is(err, rpctypes.ErrMemberLearnerNotReady) ||
		(err != nil && strings.Contains(err.Error(), rpctypes.ErrMemberLearnerNotReady.Error()))
}

// RemoveMember removes member id from the cluster, in attempts of at most
// confChangeAttemptTimeout like every membership change.
func RemoveMember(ctx context.Context, c *clientv3.Client, id uint64, log *slog.Logger) error {
	return changeMember(ctx, memberChange{
		id: id, verb: "remove", done: "etcd member removed", log: log,
		call: func(ctx context.Context) ([]*etcdserverpb.Member, error) {
			resp, err := c.MemberRemove(ctx, id)
			if err != nil {
				return nil, err
			}
			return resp.Members, nil
		},
		appliedErr: rpctypes.ErrMemberNotFound,
	})
}

// EvenVoters reports whether members hold an even (and non-zero) number of voting members: such a
// cluster tolerates no more failures than one member fewer.
func EvenVoters(members []*etcdserverpb.Member) (voters int, even bool) {
	for _, m := range members {
		if !m.IsLearner {
			voters++
		}
	}
	return voters, voters > 0 && voters%2 == 0
}

func warnEvenVoters(members []*etcdserverpb.Member, log *slog.Logger) {
	if voters, even := EvenVoters(members); even {
		log.Warn("etcd has an even number of voting members: it tolerates no more failures than one member fewer; add or remove one", "voters", voters)
	}
}

// CheckHealth answers nil when etcd serves a linearizable read with a leader. Otherwise the error
// says why in words an operator can act on: no leader (quorum lost, with how many voting members
// answer) or etcd unreachable.
func CheckHealth(ctx context.Context, c *clientv3.Client) error {
	_, err := c.Get(clientv3.WithRequireLeader(ctx), "/registry/health")
	if err == nil {
		return nil
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultMemberStatusTimeout)
	defer cancel()
	list, lerr := ListMembers(lctx, c)
	if lerr != nil {
		return fmt.Errorf("etcd unreachable: %w", err)
	}
	voters, healthy := VoterCounts(list.Members)
	if !list.Quorum {
		return fmt.Errorf("etcd quorum lost: %d of %d voting members reachable, %d needed for a leader: %w", reachableVoters(list.Members), voters, voters/2+1, err)
	}
	return fmt.Errorf("etcd read failed with %d of %d voting members healthy: %w", healthy, voters, err)
}

// WaitVoter waits until the member at endpoint sees itself as a voting member: a promotion is
// acknowledged by the leader before the promoted member applies it, and until then the member
// refuses linearizable requests ("rpc not supported for learner").
func WaitVoter(ctx context.Context, c *clientv3.Client, endpoint string, clk clock.Clock, interval time.Duration) error {
	if interval <= 0 {
		interval = DefaultPromoteInterval / 5
	}
	for {
		sctx, cancel := context.WithTimeout(ctx, DefaultMemberStatusTimeout)
		st, err := c.Status(sctx, endpoint)
		cancel()
		if err == nil && !st.IsLearner {
			return nil
		}
		if serr := sleep(ctx, clk, interval); serr != nil {
			return fmt.Errorf("etcd member at %s still a learner (%v): %w", endpoint, err, serr)
		}
	}
}
