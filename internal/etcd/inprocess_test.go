package etcd_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
)

// TestInProcessClientServesAndFollowsRestarts: the in-process client reads, writes and watches
// the member it was made from, and carries on after the member restarts, as a client of the client
// port would; once the member stops it is refused.
func TestInProcessClientServesAndFollowsRestarts(t *testing.T) {
	m := etcdtest.StartEmbedded(t, etcdtest.Options{})
	c, err := m.InProcessClient(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if got := c.Endpoints(); len(got) != 1 || got[0] != etcd.InProcessEndpoint {
		t.Fatalf("endpoints = %v, want the in-process one", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	watch := c.Watch(clientv3.WithRequireLeader(ctx), "/k")
	put, err := c.Put(ctx, "/k", "v1")
	if err != nil {
		t.Fatalf("put in process: %v", err)
	}
	select {
	case resp := <-watch:
		if err := resp.Err(); err != nil || len(resp.Events) != 1 || string(resp.Events[0].Kv.Value) != "v1" {
			t.Fatalf("watch = %+v, %v", resp.Events, err)
		}
	case <-ctx.Done():
		t.Fatal("no watch event")
	}
	// The member's own client port sees the same store.
	if resp, err := etcdtest.Client(t, m).Get(ctx, "/k"); err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].ModRevision != put.Header.Revision {
		t.Fatalf("client port get = %v, %v", resp, err)
	}
	// Status through the in-process endpoint answers for this member (the progress check asks it).
	if st, err := c.Status(ctx, etcd.InProcessEndpoint); err != nil || st.Version == "" {
		t.Fatalf("status in process = %v, %v", st, err)
	}

	if err := m.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := c.Put(ctx, "/k", "v2")
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no write in process after the member restarted: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	m.Stop()
	stopped, cancelStopped := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelStopped()
	if _, err := c.Get(stopped, "/k"); err == nil {
		t.Fatal("in-process get after the member stopped succeeded")
	}
}

// TestInProcessClientKeepsTheLeaderCheck: requests in process pass through etcd's gRPC
// interceptors, so a member that lost quorum refuses a read or a watch that asks for a leader at
// once (ErrNoLeader) instead of answering from its own state or hanging: the reason the API
// server did not use etcd's v3client, which calls the server directly.
func TestInProcessClientKeepsTheLeaderCheck(t *testing.T) {
	p := etcdtest.NewPKI(t)
	tlsCfg, err := etcd.ClientTLSConfig(p.CAFile, p.ClientCertFile, p.ClientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	specs := []etcdtest.Spec{etcdtest.NewSpec(t, "m1"), etcdtest.NewSpec(t, "m2")}
	first := etcdtest.StartMember(t, specs[0].Config(p, "", ""))
	c, err := etcd.NewClient([]string{specs[0].ClientURL()}, tlsCfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	added, err := etcd.AddLearner(ctx, c, specs[1].Name, []string{specs[1].PeerURL()}, clock.RealClock{}, 100*time.Millisecond, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	second := etcdtest.StartMember(t, specs[1].Config(p, added.InitialCluster, etcd.ClusterStateExisting))
	id, err := etcd.ParseID(added.Member.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := etcd.PromoteLearner(ctx, c, id, clock.RealClock{}, 100*time.Millisecond, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	in, err := first.InProcessClient(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	if _, err := in.Get(clientv3.WithRequireLeader(ctx), "/k"); err != nil {
		t.Fatalf("get with a leader: %v", err)
	}

	second.Stop() // one of two voters left: no quorum, and the leader steps down
	var getErr error
	for {
		rctx, rcancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), 5*time.Second)
		_, getErr = in.Get(rctx, "/k")
		rcancel()
		if errors.Is(getErr, rpctypes.ErrNoLeader) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("in process, a read that requires a leader got %v after quorum was lost, want %v", getErr, rpctypes.ErrNoLeader)
		}
		time.Sleep(100 * time.Millisecond)
	}
	wctx, wcancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), 30*time.Second)
	defer wcancel()
	resp, ok := <-in.Watch(wctx, "/k")
	if !ok || !errors.Is(resp.Err(), rpctypes.ErrNoLeader) {
		t.Fatalf("in process, a watch that requires a leader got %v (open %v) without quorum, want %v", resp.Err(), ok, rpctypes.ErrNoLeader)
	}
}
