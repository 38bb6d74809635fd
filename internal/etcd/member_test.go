package etcd_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
)

func TestConfigDefaultAndValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     etcd.Config
		wantErr string
	}{
		{name: "defaults are valid", cfg: etcd.Config{DataDir: "/var/lib/skiff/etcd"}},
		{name: "missing data dir", cfg: etcd.Config{}, wantErr: "data dir must not be empty"},
		{name: "relative data dir", cfg: etcd.Config{DataDir: "etcd"}, wantErr: "must be an absolute path"},
		{name: "bad state", cfg: etcd.Config{DataDir: "/d", ClusterState: "joining"}, wantErr: `cluster state "joining"`},
		{name: "https without cert", cfg: etcd.Config{DataDir: "/d", ListenClientURLs: []string{"https://127.0.0.1:2379"}}, wantErr: "uses https but no certificate"},
		{name: "no port", cfg: etcd.Config{DataDir: "/d", ListenPeerURLs: []string{"http://127.0.0.1"}}, wantErr: "must name a port"},
		{name: "member not in initial cluster", cfg: etcd.Config{DataDir: "/d", Name: "a", InitialCluster: "b=http://10.0.0.2:2380"}, wantErr: `does not list this member "a"`},
		{name: "client cert auth without CA", cfg: etcd.Config{DataDir: "/d", ClientTLS: etcd.TLSFiles{CertFile: "c", KeyFile: "k", ClientCertAuth: true}}, wantErr: "needs a trusted CA file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Default()
			err := cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if cfg.InitialCluster != "default=http://127.0.0.1:2380" || cfg.ClusterState != etcd.ClusterStateNew {
					t.Fatalf("unexpected defaults: %+v", cfg)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestEmbeddedMemberServesUntilStopped(t *testing.T) {
	m := etcdtest.StartEmbedded(t, etcdtest.Options{})
	c := etcdtest.Client(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, "/k", "v"); err != nil {
		t.Fatalf("put: %v", err)
	}
	resp, err := c.Get(ctx, "/k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("get = %v, %v", resp, err)
	}
	m.Stop()
	m.Stop() // idempotent
	stoppedCtx, stoppedCancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer stoppedCancel()
	if _, err := c.Get(stoppedCtx, "/k"); err == nil {
		t.Fatal("get after Stop succeeded")
	}
}

func TestStartStopsWhenContextEnds(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := etcd.Config{
		DataDir:          dir + "/etcd",
		ListenClientURLs: []string{"http://127.0.0.1:" + strconv.Itoa(etcdtest.FreePort(t))},
		ListenPeerURLs:   []string{"http://127.0.0.1:" + strconv.Itoa(etcdtest.FreePort(t))},
	}
	m, err := etcd.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer m.Stop()
	<-m.Ready()
	cancel()
	c, err := m.Client()
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rctx, rcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err := c.Get(rctx, "/k")
		rcancel()
		if err != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("member still serving after its context ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stoppedOneMember starts a one-member etcd in dir with its log at info (into log), writes 300
// keys and stops it, and returns its config for a restart. 300 raft entries, fewer than a disk
// snapshot's 500, are replayed by the restart, and etcd compacts its in-memory raft log as soon
// as it has applied more than 200 of them: the window in which raft, not yet told they are
// applied, would panic if asked to campaign.
func stoppedOneMember(tb testing.TB, dir string, log *slog.Logger) etcd.Config {
	tb.Helper()
	cfg := etcd.Config{
		DataDir:          dir,
		ListenClientURLs: []string{"http://127.0.0.1:" + strconv.Itoa(etcdtest.FreePort(tb))},
		ListenPeerURLs:   []string{"http://127.0.0.1:" + strconv.Itoa(etcdtest.FreePort(tb))},
		ReadyTimeout:     30 * time.Second,
		LogLevel:         "info",
		Logger:           log,
	}
	m := startReady(tb, cfg)
	defer m.Stop()
	c, err := m.Client()
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 300 {
		if _, err := c.Put(ctx, "/k", strconv.Itoa(i)); err != nil {
			tb.Fatalf("put: %v", err)
		}
	}
	return cfg
}

// startReady starts a member and waits until it serves.
func startReady(tb testing.TB, cfg etcd.Config) *etcd.Member {
	tb.Helper()
	m, err := etcd.Start(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("Start: %v", err)
	}
	select {
	case <-m.Ready():
	case <-m.Failed():
		tb.Fatalf("member failed: %v", m.Err())
	}
	return m
}

// A restarted one-member cluster campaigns as soon as its recovered log is applied, instead of
// after raft's randomized election timeout (up to 1 s with etcd's defaults): its election is a
// MsgTimeoutNow it sends itself. The election timer may still win a race under load, so one of
// the restarts will do; without the hurry none campaigns that way. Every restart replays 300
// entries, and a campaign asked for before raft hears they are applied would panic the member
// (as the first version, which went by etcd's applied index, did in one of eight restarts of a whole
// node under heavy load).
func TestOneMemberRestartCampaignsAtOnce(t *testing.T) {
	dir := t.TempDir()
	hurried := 0
	for i := range 8 {
		var buf syncBuffer
		cfg := stoppedOneMember(t, filepath.Join(dir, strconv.Itoa(i)), slog.New(slog.NewTextHandler(&buf, nil)))
		for restart := range 3 {
			buf.Reset()
			m := startReady(t, cfg)
			c := etcdtest.Client(t, m)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			resp, err := c.Get(ctx, "/k")
			cancel()
			if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "299" {
				t.Fatalf("get after restart = %v, %v", resp, err)
			}
			m.Stop()
			if strings.Contains(buf.String(), "received MsgTimeoutNow") {
				hurried++
			} else {
				t.Logf("member %d, restart %d: elected by its timer", i, restart)
			}
		}
	}
	if hurried == 0 {
		t.Fatal("no restart of a one-member cluster campaigned on its own MsgTimeoutNow")
	}
}

// A fresh one-member cluster, elected at once, logs no error. Its storage-version monitor runs
// as soon as the cluster version is set, right after the election; it read the term of the
// applied index from the backend, which writes it only when it commits, and found none
// ("cannot detect storage schema version: missing term information") until the campaign came
// after a forced commit.
func TestFreshOneMemberLogsNoError(t *testing.T) {
	dir := t.TempDir()
	for i := range 5 {
		var buf syncBuffer
		cfg := etcd.Config{
			DataDir:          filepath.Join(dir, strconv.Itoa(i)),
			ListenClientURLs: []string{"http://127.0.0.1:" + strconv.Itoa(etcdtest.FreePort(t))},
			ListenPeerURLs:   []string{"http://127.0.0.1:" + strconv.Itoa(etcdtest.FreePort(t))},
			ReadyTimeout:     30 * time.Second,
			LogLevel:         "info",
			Logger:           slog.New(slog.NewTextHandler(&buf, nil)),
		}
		m := startReady(t, cfg)
		c := etcdtest.Client(t, m)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.Put(ctx, "/k", "v")
		cancel()
		if err != nil {
			t.Fatalf("put: %v", err)
		}
		// The monitor has run once the storage version is written: give it that long.
		eventuallyLogged(t, &buf, "updated storage version")
		m.Stop()
		for _, line := range strings.Split(buf.String(), "\n") {
			if strings.Contains(line, "level=ERROR") {
				t.Errorf("member %d: a fresh start logged an error: %s", i, line)
			}
		}
	}
}

// eventuallyLogged waits up to 10 s for text in the log.
func eventuallyLogged(t *testing.T, buf *syncBuffer, text string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(buf.String(), text) {
		if time.Now().After(deadline) {
			t.Logf("log:\n%s", buf.String())
			t.Fatalf("no %q in the log within 10 s", text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for etcd's goroutines to log into.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// BenchmarkOneMemberRestart is a one-member etcd's restart to ready, the election wait that a
// restarted single node's API server sees first.
func BenchmarkOneMemberRestart(b *testing.B) {
	log := slog.New(slog.DiscardHandler)
	dir := b.TempDir()
	for i := range b.N {
		b.StopTimer()
		cfg := stoppedOneMember(b, filepath.Join(dir, strconv.Itoa(i)), log)
		b.StartTimer()
		startReady(b, cfg).Stop()
	}
}
