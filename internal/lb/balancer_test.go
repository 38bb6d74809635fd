package lb

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fakeAPIServer is an HTTPS server on 127.0.0.1 that answers every path with its name. kill closes
// its listener only: new connections are refused while open ones hang on, as with a server whose
// host stopped answering, so only the balancer can cut them.
type fakeAPIServer struct {
	name string
	srv  *httptest.Server
	ln   net.Listener
}

func newFakeAPIServer(t *testing.T, name string) *fakeAPIServer {
	t.Helper()
	f := &fakeAPIServer{name: name}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, name)
	}))
	f.srv.StartTLS()
	f.ln = f.srv.Listener
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPIServer) addr() string { return f.ln.Addr().String() }
func (f *fakeAPIServer) kill()        { f.ln.Close() }

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// get sends one keep-alive request on conn and returns the body.
func get(conn *tls.Conn, r *bufio.Reader) (string, error) {
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

func TestFailoverToTheOtherBackend(t *testing.T) {
	one, two := newFakeAPIServer(t, "one"), newFakeAPIServer(t, "two")
	pool := x509.NewCertPool()
	pool.AddCert(one.srv.Certificate())
	tlsCfg := &tls.Config{RootCAs: pool, ServerName: "example.com", MinVersion: tls.VersionTLS12}
	b, err := New(Config{
		ListenAddress: "127.0.0.1:0", Seeds: []string{one.addr(), two.addr()}, ProbeTLS: tlsCfg,
		ProbeInterval: 100 * time.Millisecond, Registerer: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	waitFor(t, 10*time.Second, "both backends healthy", func() bool {
		for _, be := range b.Backends() {
			if be.Health != Healthy {
				return false
			}
		}
		return true
	})

	// A long-lived client connection, TLS end to end through the balancer.
	dial := func() (*tls.Conn, *bufio.Reader, string, error) {
		c, err := tls.Dial("tcp", b.Addr(), tlsCfg)
		if err != nil {
			return nil, nil, "", err
		}
		r := bufio.NewReader(c)
		name, err := get(c, r)
		return c, r, name, err
	}
	old, oldReader, first, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	dead, other := one, two
	if first == "two" {
		dead, other = two, one
	}

	killed := time.Now()
	dead.kill()
	// The very next connection goes to the other backend: the refused dial moves on at once.
	c, _, name, err := dial()
	if err != nil {
		t.Fatalf("first connection after the kill: %v", err)
	}
	c.Close()
	if name != other.name {
		t.Fatalf("first connection after the kill answered by %q, want %q", name, other.name)
	}
	t.Logf("first new connection after the kill served by %s after %s", name, time.Since(killed))

	// The connection to the dead backend is cut once it is found unhealthy, so its client
	// reconnects: a read ends with EOF or a reset, not a timeout.
	_ = old.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err = oldReader.ReadByte()
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("connection to the dead backend still open: %v", err)
	}
	t.Logf("connection to the dead backend closed %s after the kill (%v)", time.Since(killed), err)
	for _, be := range b.Backends() {
		if be.Addr == dead.addr() && be.Health != Unhealthy {
			t.Fatalf("dead backend is %s", be.Health)
		}
	}
	// Every connection from now on reaches the survivor.
	for range 5 {
		c, _, name, err := dial()
		if err != nil || name != other.name {
			t.Fatalf("after failover: %q, %v", name, err)
		}
		c.Close()
	}
}

func TestLearnedBackendsReplaceTheSeed(t *testing.T) {
	seed, learned := newFakeAPIServer(t, "seed"), newFakeAPIServer(t, "learned")
	pool := x509.NewCertPool()
	pool.AddCert(seed.srv.Certificate())
	tlsCfg := &tls.Config{RootCAs: pool, ServerName: "example.com", MinVersion: tls.VersionTLS12}
	b, err := New(Config{ListenAddress: "127.0.0.1:0", Seeds: []string{seed.addr()}, ProbeTLS: tlsCfg, ProbeInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	defer func() { cancel(); <-done }()
	b.SetEndpoints([]string{learned.addr()})
	seed.kill()
	waitFor(t, 10*time.Second, "the learned backend healthy", func() bool {
		for _, be := range b.Backends() {
			if be.Addr == learned.addr() {
				return be.Health == Healthy
			}
		}
		return false
	})
	c, err := tls.Dial("tcp", b.Addr(), tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if name, err := get(c, bufio.NewReader(c)); err != nil || !strings.Contains(name, "learned") {
		t.Fatalf("got %q, %v; want the learned backend", name, err)
	}
}
