package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/etcd"
)

// A member whose port another process took between the free-port probe and etcd's bind fails
// with an error portTaken knows, so StartEmbeddedInDir tries new ports.
func TestPortTakenKnowsEtcdsBindError(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	peer, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	_, err = etcd.Start(context.Background(), etcd.Config{
		Name:             "test",
		DataDir:          filepath.Join(t.TempDir(), "etcd"),
		ListenClientURLs: []string{fmt.Sprintf("http://%s", taken.Addr())},
		ListenPeerURLs:   []string{fmt.Sprintf("http://127.0.0.1:%d", peer)},
		ReadyTimeout:     10 * time.Second,
		LogLevel:         "error",
	})
	if err == nil {
		t.Fatal("etcd started on a taken port")
	}
	if !portTaken(err) {
		t.Errorf("portTaken(%v) = false", err)
	}
	if portTaken(errors.New("no space left on device")) {
		t.Error("portTaken of another error is true")
	}
	m, stop, err := StartEmbeddedInDir(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	<-m.Ready()
}
