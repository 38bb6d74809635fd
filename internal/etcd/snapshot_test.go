package etcd_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
)

func TestSnapshotSaveAndRestore(t *testing.T) {
	src := etcdtest.StartEmbedded(t, etcdtest.Options{})
	c := etcdtest.Client(t, src)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 50 {
		if _, err := c.Put(ctx, fmt.Sprintf("/registry/core/configmaps/default/cm-%02d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "backup.db")
	st, err := etcd.SaveSnapshot(ctx, c, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.TotalKeys < 50 || st.Revision < 50 {
		t.Fatalf("snapshot status %+v, want at least the 50 keys written", st)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, "*.part-*")); len(leftovers) != 0 {
		t.Fatalf("partial files left: %v", leftovers)
	}

	peer := "http://127.0.0.1:" + freePort(t)
	restored := filepath.Join(dir, "restored", "etcd")
	if err := etcd.RestoreSnapshot(path, restored, "node-b", peer, nil); err != nil {
		t.Fatal(err)
	}
	if err := etcd.RestoreSnapshot(path, restored, "node-b", peer, nil); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("restore over an existing dir: %v", err)
	}
	m, err := etcd.Start(context.Background(), etcd.Config{
		Name: "node-b", DataDir: restored, LogLevel: "error", ReadyTimeout: 30 * time.Second,
		ListenClientURLs: []string{"http://127.0.0.1:" + freePort(t)}, ListenPeerURLs: []string{peer},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	select {
	case <-m.Ready():
	case <-m.Failed():
		t.Fatalf("restored member: %v", m.Err())
	}
	rc := etcdtest.Client(t, m)
	resp, err := rc.Get(ctx, "/registry/core/configmaps/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 50 {
		t.Fatalf("restored keys: %d, %v", len(resp.Kvs), err)
	}
	// The revision moved past every one the old cluster could have handed out since the snapshot,
	// and those in between are compacted: a watch from one gets ErrCompacted (410 to a client).
	if resp.Header.Revision < st.Revision+etcd.RestoreRevisionBump {
		t.Fatalf("restored revision %d, want at least the snapshot's %d + %d", resp.Header.Revision, st.Revision, etcd.RestoreRevisionBump)
	}
	if _, err := rc.Get(ctx, "/registry/core/configmaps/default/cm-00", clientv3.WithRev(st.Revision+1)); err == nil || !strings.Contains(err.Error(), "compacted") {
		t.Fatalf("read at a revision after the snapshot: %v, want compacted", err)
	}
	put, err := rc.Put(ctx, "/registry/core/configmaps/default/new", "v")
	if err != nil || put.Header.Revision <= st.Revision+etcd.RestoreRevisionBump {
		t.Fatalf("first write after the restore at revision %v (%v), want above %d", put, err, st.Revision+etcd.RestoreRevisionBump)
	}
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	wresp := <-rc.Watch(wctx, "/registry/", clientv3.WithPrefix(), clientv3.WithRev(st.Revision+2))
	if wresp.CompactRevision == 0 {
		t.Fatalf("watch from a revision the restore skipped: %+v, want it compacted", wresp)
	}

	if err := os.WriteFile(filepath.Join(dir, "bad.db"), []byte("not a snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := etcd.RestoreSnapshot(filepath.Join(dir, "bad.db"), filepath.Join(dir, "other"), "x", peer, nil); err == nil {
		t.Fatal("restoring a damaged snapshot succeeded")
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}
