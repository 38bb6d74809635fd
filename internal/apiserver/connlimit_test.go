package apiserver

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// acceptAll serves ln by holding every accepted connection open until the test ends.
func acceptAll(t *testing.T, ln net.Listener) {
	t.Helper()
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
}

// closedByServer reports whether the server side closed c (a read ends in EOF or a reset)
// within wait: long where a close is expected (load delays it), short where it is not.
func closedByServer(c net.Conn, wait time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	_, err := c.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return err != nil
}

func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestLimitListenerPerClient(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	reasons := map[string]int{}
	ln := LimitListener(raw, ConnLimits{PerClient: 2, Total: 3}, func(reason string) {
		mu.Lock()
		reasons[reason]++
		mu.Unlock()
	})
	acceptAll(t, ln)
	addr := raw.Addr().String()

	a1, a2 := dialFrom(t, "127.0.0.2", addr), dialFrom(t, "127.0.0.2", addr)
	a3 := dialFrom(t, "127.0.0.2", addr)
	if !closedByServer(a3, 10*time.Second) {
		t.Fatal("a third connection from one client was kept")
	}
	if closedByServer(a1, 200*time.Millisecond) || closedByServer(a2, 200*time.Millisecond) {
		t.Fatal("a connection within the per-client limit was closed")
	}
	// Another client still gets in, up to the total.
	b1 := dialFrom(t, "127.0.0.3", addr)
	if closedByServer(b1, 200*time.Millisecond) {
		t.Fatal("another client was refused under the total")
	}
	b2 := dialFrom(t, "127.0.0.3", addr)
	if !closedByServer(b2, 10*time.Second) {
		t.Fatal("a connection over the total was kept")
	}
	mu.Lock()
	if reasons["per-client"] == 0 || reasons["total"] == 0 {
		t.Errorf("refusals not reported by reason: %v", reasons)
	}
	mu.Unlock()
}

// TestLimitListenerReleases: a closed connection gives its place back, once, however often it is
// closed.
func TestLimitListenerReleases(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitListener(raw, ConnLimits{PerClient: 1}, nil).(*limitListener)
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	addr := raw.Addr().String()
	for i := range 3 {
		client := dialFrom(t, "127.0.0.4", addr)
		var server net.Conn
		select {
		case server = <-accepted:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: connection not accepted after the previous one closed", i)
		}
		server.Close()
		server.Close()
		_, _ = io.ReadAll(client)
		if total, from := ln.open("127.0.0.4"); total != 0 || from != 0 {
			t.Fatalf("round %d: %d/%d places held after close", i, total, from)
		}
	}
}
