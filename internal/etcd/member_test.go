package etcd_test

import (
	"context"
	"strconv"
	"strings"
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
