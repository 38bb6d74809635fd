package etcd3_test

import (
	"testing"

	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
	"github.com/skiff-sh/skiff/internal/storage/etcd3"
)

func TestProgressSound(t *testing.T) {
	for v, want := range map[string]bool{
		"3.4.23": false, "3.4.30": false, "3.4.31": true, "3.4.40": true,
		"3.5.12": false, "3.5.13": true, "3.5.21": true,
		"3.6.0": true, "3.7.3": true, "v3.6.0-rc.1": true, "4.0.0": true,
		"3.3.27": false, "2.3.8": false, "": false, "garbage": false, "3.5": false,
	} {
		if got := etcd3.ProgressSound(v); got != want {
			t.Errorf("ProgressSound(%q) = %t, want %t", v, got, want)
		}
	}
}

// TestProgressSupportReadsTheVersion: the embedded member (3.7) is believed; Debian's etcd-server
// (3.4.23, as an external etcd may be) is not: the store refuses to ask it for progress and says
// so, so a watch cache serves consistent lists from etcd instead of waiting on it.
func TestProgressSupportReadsTheVersion(t *testing.T) {
	embedded := etcdtest.Client(t, env.member(t))
	if !etcd3.NewProgressSupport(embedded, clock.RealClock{}).Supported(ctxFor(t)) {
		t.Errorf("the embedded etcd's progress notifications are not believed")
	}
	url := etcdtest.StartExternal(t)
	client, err := etcd.NewClient([]string{url}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	p := etcd3.NewProgressSupport(client, clock.RealClock{})
	if p.Supported(ctxFor(t)) {
		t.Fatalf("etcd at %s (Debian's 3.4) believed", url)
	}
	s := etcd3.New(client, nil, nil, nil).WithProgressSupport(p)
	if s.WatchProgressSupported(ctxFor(t)) {
		t.Error("WatchProgressSupported = true")
	}
	if err := s.RequestWatchProgress(ctxFor(t)); err == nil {
		t.Error("RequestWatchProgress asked an etcd whose progress notifications run ahead of its events")
	}
}
