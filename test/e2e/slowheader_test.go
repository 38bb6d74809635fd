package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"
)

// TestSlowHeadersAreCut: a client that sends its request headers slowly (a slowloris) has its
// connection closed at the read-header timeout (--read-header-timeout, 1 s here instead of 32 s)
// while other clients keep being served.
func TestSlowHeadersAreCut(t *testing.T) {
	c := newCluster(t, "--read-header-timeout=1s")
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(c.ports[0]))
	anon := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}} //nolint:gosec // an anonymous attacker
	conn, err := tls.Dial("tcp", addr, anon)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	closed := make(chan error, 1)
	go func() {
		// The server sends nothing useful to a request it never got whole; it only closes.
		_, err := io.Copy(io.Discard, conn)
		closed <- err
	}()
	if _, err := fmt.Fprintf(conn, "GET /version HTTP/1.1\r\nHost: %s\r\n", addr); err != nil {
		t.Fatal(err)
	}
	// One header line every 200 ms, for up to 30 s, never the blank line that ends them.
	cut := false
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < 150 && !cut; i++ {
		select {
		case <-closed:
			cut = true
		case <-tick.C:
			if _, err := fmt.Fprintf(conn, "X-Slow-%d: still-coming\r\n", i); err != nil {
				cut = true
			}
		}
		if i == 2 {
			// Others are served while the slow client dawdles.
			mustContain(t, c.kubectl("get", "namespaces"), "kube-system")
		}
	}
	if !cut {
		t.Fatal("a client sending headers for 30 s was never cut off (read-header timeout 1 s)")
	}
	mustContain(t, c.kubectl("get", "--raw", "/readyz"), "ok")
}
