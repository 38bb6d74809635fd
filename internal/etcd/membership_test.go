package etcd_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
	"github.com/skiff-sh/skiff/internal/etcdapi"
)

func TestInitialCluster(t *testing.T) {
	tests := []struct {
		name    string
		members []*etcdserverpb.Member
		want    string
	}{
		{
			name: "new member listed under its name",
			members: []*etcdserverpb.Member{
				{ID: 1, Name: "a", PeerURLs: []string{"https://127.0.0.1:2380"}},
				{ID: 2, PeerURLs: []string{"https://127.0.0.2:2380"}},
			},
			want: "a=https://127.0.0.1:2380,b=https://127.0.0.2:2380",
		},
		{
			name: "another pending learner is left out",
			members: []*etcdserverpb.Member{
				{ID: 1, Name: "a", PeerURLs: []string{"https://127.0.0.1:2380"}},
				{ID: 3, PeerURLs: []string{"https://127.0.0.3:2380"}, IsLearner: true},
				{ID: 2, PeerURLs: []string{"https://127.0.0.2:2380"}, IsLearner: true},
			},
			want: "a=https://127.0.0.1:2380,b=https://127.0.0.2:2380",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := etcd.InitialCluster(tt.members, 2, "b"); got != tt.want {
				t.Fatalf("InitialCluster = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestQuorumAndEvenVoters(t *testing.T) {
	m := func(healthy, learner bool) etcdapi.Member {
		return etcdapi.Member{Healthy: healthy, IsLearner: learner}
	}
	tests := []struct {
		name    string
		members []etcdapi.Member
		quorum  bool
	}{
		{name: "none", quorum: false},
		{name: "one healthy", members: []etcdapi.Member{m(true, false)}, quorum: true},
		{name: "two of three", members: []etcdapi.Member{m(true, false), m(true, false), m(false, false)}, quorum: true},
		{name: "one of three", members: []etcdapi.Member{m(true, false), m(false, false), m(false, false)}, quorum: false},
		{name: "one of two", members: []etcdapi.Member{m(true, false), m(false, false)}, quorum: false},
		{name: "learners do not count", members: []etcdapi.Member{m(true, false), m(false, false), m(true, true), m(true, true)}, quorum: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := etcd.HasQuorum(tt.members); got != tt.quorum {
				t.Fatalf("HasQuorum = %v, want %v", got, tt.quorum)
			}
		})
	}
	if _, even := etcd.EvenVoters([]*etcdserverpb.Member{{ID: 1}, {ID: 2}, {ID: 3, IsLearner: true}}); !even {
		t.Fatal("two voters and a learner: want even")
	}
	if _, even := etcd.EvenVoters([]*etcdserverpb.Member{{ID: 1}, {ID: 2}, {ID: 3}}); even {
		t.Fatal("three voters: want odd")
	}
}

func TestParseID(t *testing.T) {
	id, err := etcd.ParseID(etcd.FormatID(0x8e9e05c52164694d))
	if err != nil || id != 0x8e9e05c52164694d {
		t.Fatalf("ParseID round trip = %x, %v", id, err)
	}
	for _, bad := range []string{"", "0", "xyz", "-1"} {
		if _, err := etcd.ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) accepted", bad)
		}
	}
}

// TestMembershipOverTLS grows a TLS cluster from one member to three through learners, loses and
// regains quorum, and removes a dead member.
func TestMembershipOverTLS(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	p := etcdtest.NewPKI(t)
	tlsCfg, err := etcd.ClientTLSConfig(p.CAFile, p.ClientCertFile, p.ClientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	specs := []etcdtest.Spec{etcdtest.NewSpec(t, "m1"), etcdtest.NewSpec(t, "m2"), etcdtest.NewSpec(t, "m3")}
	members := make([]*etcd.Member, 3)
	members[0] = etcdtest.StartMember(t, specs[0].Config(p, "", ""))
	c, err := etcd.NewClient([]string{specs[0].ClientURL()}, tlsCfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// A client without a certificate is refused: client-cert auth is on.
	noCert, err := etcd.ClientTLSConfig(p.CAFile, "", "")
	if err != nil {
		t.Fatal(err)
	}
	anon, err := etcd.NewClient([]string{specs[0].ClientURL()}, noCert, log)
	if err != nil {
		t.Fatal(err)
	}
	actx, acancel := context.WithTimeout(ctx, 2*time.Second)
	if _, err := anon.Put(actx, "/anon", "x"); err == nil {
		t.Error("a client without a certificate could write")
	}
	acancel()
	_ = anon.Close()

	if _, err := c.Put(ctx, "/before", "1"); err != nil {
		t.Fatal(err)
	}
	ids := make([]uint64, 3)
	for i := 1; i < 3; i++ {
		added, err := etcd.AddLearner(ctx, c, specs[i].Name, []string{specs[i].PeerURL()}, clock.RealClock{}, 100*time.Millisecond, log)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(added.InitialCluster, specs[i].Name+"="+specs[i].PeerURL()) {
			t.Fatalf("initial cluster %q lacks the new member", added.InitialCluster)
		}
		// A retried join (the learner never started) gets the same member back.
		again, err := etcd.AddLearner(ctx, c, specs[i].Name, []string{specs[i].PeerURL()}, clock.RealClock{}, 100*time.Millisecond, log)
		if err != nil || again.Member.ID != added.Member.ID || again.InitialCluster != added.InitialCluster {
			t.Fatalf("retried add = %+v, %v; want member %s again", again, err, added.Member.ID)
		}
		members[i] = etcdtest.StartMember(t, specs[i].Config(p, added.InitialCluster, etcd.ClusterStateExisting))
		if ids[i], err = etcd.ParseID(added.Member.ID); err != nil {
			t.Fatal(err)
		}
		if err := etcd.PromoteLearner(ctx, c, ids[i], clock.RealClock{}, 100*time.Millisecond, log); err != nil {
			t.Fatal(err)
		}
		if err := etcd.WaitVoter(ctx, c, specs[i].ClientURL(), clock.RealClock{}, 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		// Two voters after the first promotion: an even count is warned about; three are not.
		if even := strings.Contains(logs.String(), "even number of voting members"); even != (i == 1) {
			t.Fatalf("after promoting member %d, even-count warning logged = %v:\n%s", i+1, even, logs.String())
		}
		logs.Reset()
	}
	list := waitMembers(ctx, t, c, func(l *etcdapi.MemberList) error {
		if len(l.Members) != 3 || !l.Quorum || l.LeaderID == "" {
			return errors.New("want 3 members with quorum and a leader")
		}
		for _, m := range l.Members {
			if m.IsLearner || !m.Healthy || m.RaftIndex == 0 || m.DBSize == 0 {
				return errors.New("member " + m.Name + " not a healthy voter yet")
			}
		}
		return nil
	})
	leaders := 0
	for _, m := range list.Members {
		if m.IsLeader {
			leaders++
		}
	}
	if leaders != 1 {
		t.Fatalf("want exactly one leader, got %+v", list.Members)
	}
	// The data written before the members joined reached them.
	m3, err := members[2].Client()
	if err != nil {
		t.Fatal(err)
	}
	defer m3.Close()
	if resp, err := m3.Get(ctx, "/before"); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("joined member lacks earlier data: %v, %v", resp, err)
	}

	// Quorum lost: two of three members stop; writes fail within their timeout and the health
	// check names the lost quorum.
	members[1].Stop()
	members[2].Stop()
	waitHealth(ctx, t, c, func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "etcd quorum lost: 1 of 3 voting members reachable")
	})
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	_, err = c.Put(wctx, "/during", "x")
	wcancel()
	if err == nil {
		t.Fatal("a write succeeded without quorum")
	}

	// Quorum regained: one member comes back, and writes work again by themselves.
	members[2] = etcdtest.StartMember(t, specs[2].Config(p, "", ""))
	waitHealth(ctx, t, c, func(err error) bool { return err == nil })
	if _, err := c.Put(ctx, "/after", "1"); err != nil {
		t.Fatalf("write after quorum regained: %v", err)
	}

	// The dead member is removed: two voters (an even count, warned about), both healthy.
	if err := etcd.RemoveMember(ctx, c, ids[1], log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "even number of voting members") {
		t.Errorf("removal down to two voters logged no warning:\n%s", logs.String())
	}
	waitMembers(ctx, t, c, func(l *etcdapi.MemberList) error {
		if len(l.Members) != 2 || !l.Quorum {
			return errors.New("want 2 members with quorum")
		}
		for _, m := range l.Members {
			if m.Name == "m2" {
				return errors.New("m2 still listed")
			}
		}
		return nil
	})
}

func waitMembers(ctx context.Context, t *testing.T, c *clientv3.Client, ok func(*etcdapi.MemberList) error) *etcdapi.MemberList {
	t.Helper()
	var last error
	for ctx.Err() == nil {
		l, err := etcd.ListMembers(ctx, c)
		if err == nil {
			if err = ok(l); err == nil {
				return l
			}
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("members: %v", last)
	return nil
}

func waitHealth(ctx context.Context, t *testing.T, c *clientv3.Client, ok func(error) bool) {
	t.Helper()
	var last error
	for ctx.Err() == nil {
		hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		last = etcd.CheckHealth(hctx, c)
		cancel()
		if ok(last) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("health never as expected; last: %v", last)
}

// learnerOfOne starts a one-member cluster (m1) and adds m2 as a learner, not yet started; specs
// hold a third member's ports (m3) too.
func learnerOfOne(ctx context.Context, t *testing.T) (*etcdtest.PKI, []etcdtest.Spec, *clientv3.Client, *etcdapi.AddMemberResponse, *slog.Logger) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := etcdtest.NewPKI(t)
	tlsCfg, err := etcd.ClientTLSConfig(p.CAFile, p.ClientCertFile, p.ClientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	specs := []etcdtest.Spec{etcdtest.NewSpec(t, "m1"), etcdtest.NewSpec(t, "m2"), etcdtest.NewSpec(t, "m3")}
	etcdtest.StartMember(t, specs[0].Config(p, "", ""))
	c, err := etcd.NewClient([]string{specs[0].ClientURL()}, tlsCfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	first, err := etcd.AddLearner(ctx, c, "m2", []string{specs[1].PeerURL()}, clock.RealClock{}, 50*time.Millisecond, log)
	if err != nil {
		t.Fatal(err)
	}
	return p, specs, c, first, log
}

// TestAddLearnerWaitsForTheLearnerBefore: etcd takes one learner at a time, so a second member
// joining while the first is still a learner (two control planes started together after a
// cluster reset) waits for its promotion instead of failing the join.
func TestAddLearnerWaitsForTheLearnerBefore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, specs, c, first, log := learnerOfOne(ctx, t)
	second := make(chan error, 1)
	go func() {
		_, err := etcd.AddLearner(ctx, c, "m3", []string{specs[2].PeerURL()}, clock.RealClock{}, 50*time.Millisecond, log)
		second <- err
	}()
	select {
	case err := <-second:
		t.Fatalf("the second learner was answered while the first was one: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	etcdtest.StartMember(t, specs[1].Config(p, first.InitialCluster, etcd.ClusterStateExisting))
	id, err := etcd.ParseID(first.Member.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := etcd.PromoteLearner(ctx, c, id, clock.RealClock{}, 50*time.Millisecond, log); err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatalf("the second learner, once the first was promoted: %v", err)
	}
}

// TestMembershipChangesSurviveAConfChangeRaftIgnored: raft ignores a configuration change
// proposed while another is being applied, and etcd answers such a proposal only when its caller
// gives up. Other members asking to join at the same moment (each refused only when applied) must
// not leave a promotion or a removal waiting for its whole deadline.
func TestMembershipChangesSurviveAConfChangeRaftIgnored(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p, specs, c, first, log := learnerOfOne(ctx, t)
	etcdtest.StartMember(t, specs[1].Config(p, first.InitialCluster, etcd.ClusterStateExisting))
	id, err := etcd.ParseID(first.Member.ID)
	if err != nil {
		t.Fatal(err)
	}
	joiner := []string{specs[2].PeerURL()}
	whileJoining(ctx, t, c, joiner, "promotion", func() error {
		return etcd.PromoteLearner(ctx, c, id, clock.RealClock{}, 50*time.Millisecond, log)
	})
	if m := memberByID(ctx, t, c, id); m == nil || m.IsLearner {
		t.Fatalf("member %s after its promotion: %v", first.Member.ID, m)
	}
	// etcd refuses to remove a voter until the others have been connected to it for 5 s (its
	// quorum check), and the member has only just started: wait for that first.
	waitRemovable(ctx, t, c, specs[0].ClientURL())
	whileJoining(ctx, t, c, joiner, "removal", func() error {
		for {
			err := etcd.RemoveMember(ctx, c, id, log)
			if !errors.Is(err, rpctypes.ErrUnhealthy) || ctx.Err() != nil {
				return err
			}
			time.Sleep(100 * time.Millisecond) // a loaded machine: the peers reconnected
		}
	})
	if m := memberByID(ctx, t, c, id); m != nil {
		t.Fatalf("member %s after its removal: %v", first.Member.ID, m)
	}
}

// whileJoining runs change while joiners ask, in a tight loop for 2 s, to add a learner at
// peerURLs: a configuration change is pending most of that time, so a change raft ignores then
// waits for an answer that never comes.
func whileJoining(ctx context.Context, t *testing.T, c *clientv3.Client, peerURLs []string, what string, change func() error) {
	t.Helper()
	joinCtx, stopJoining := context.WithTimeout(ctx, 2*time.Second)
	done := make(chan struct{})
	const joiners = 3
	for range joiners {
		go func() {
			defer func() { done <- struct{}{} }()
			for joinCtx.Err() == nil {
				actx, cancel := context.WithTimeout(joinCtx, 2*time.Second)
				_, _ = c.MemberAddAsLearner(actx, peerURLs)
				cancel()
			}
		}()
	}
	start := time.Now()
	err := change()
	took := time.Since(start)
	stopJoining()
	for range joiners {
		<-done
	}
	if err != nil {
		t.Fatalf("%s while others asked to join (after %v): %v", what, took, err)
	}
	t.Logf("%s after %v", what, took)
}

// waitRemovable waits until the member at clientURL has been connected to every other voter for
// etcd's health interval (5 s), as its quorum check on a removal asks.
func waitRemovable(ctx context.Context, t *testing.T, c *clientv3.Client, clientURL string) {
	t.Helper()
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(6 * time.Second):
	}
	if _, err := c.Status(ctx, clientURL); err != nil {
		t.Fatal(err)
	}
}

// memberByID is the member of that ID, or nil.
func memberByID(ctx context.Context, t *testing.T, c *clientv3.Client, id uint64) *etcdserverpb.Member {
	t.Helper()
	list, err := c.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Members {
		if m.ID == id {
			return m
		}
	}
	return nil
}
