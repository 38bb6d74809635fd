package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSlowBodies: a request whose body never completes (one byte of a declared 100,000, or a
// byte trickling every 200 ms) is refused on its headers when its caller may not make it
// (anonymous, or a service account without the right), answered 403 while the body is still
// incomplete, and its connection closed. An authorized caller's stalled body is answered 504 at
// the request timeout (--request-timeout, 2 s here instead of 60 s) and its connection closed.
// Other clients are served meanwhile.
func TestSlowBodies(t *testing.T) {
	const requestTimeout = 2 * time.Second
	c := newCluster(t, "--request-timeout="+requestTimeout.String())
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(c.ports[0]))
	anon := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}} //nolint:gosec // an anonymous attacker
	admin, _ := c.adminTLS(t)
	c.kubectl("create", "serviceaccount", "lowly", "-n", "default")
	token := strings.TrimSpace(c.kubectl("create", "token", "lowly", "-n", "default"))
	lowly := "Authorization: Bearer " + token + "\r\n"

	for _, tc := range []struct {
		name    string
		tls     *tls.Config
		headers string
		trickle bool
		code    int
		reason  metav1.StatusReason
	}{
		{"anonymous, stalled", anon, "", false, http.StatusForbidden, metav1.StatusReasonForbidden},
		{"anonymous, trickling", anon, "", true, http.StatusForbidden, metav1.StatusReasonForbidden},
		{"service account without the right, stalled", anon, lowly, false, http.StatusForbidden, metav1.StatusReasonForbidden},
		{"service account without the right, trickling", anon, lowly, true, http.StatusForbidden, metav1.StatusReasonForbidden},
		{"admin, stalled", admin, "", false, http.StatusGatewayTimeout, metav1.StatusReasonTimeout},
		{"admin, trickling", admin, "", true, http.StatusGatewayTimeout, metav1.StatusReasonTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := tls.Dial("tcp", addr, tc.tls)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			if _, err := fmt.Fprintf(conn, "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: %s\r\n"+
				"Content-Type: application/json\r\nContent-Length: 100000\r\n%s\r\n{", addr, tc.headers); err != nil {
				t.Fatal(err)
			}
			if tc.trickle {
				stop := trickle(conn)
				defer stop()
			}
			// Others are served while this client holds its request open.
			mustContain(t, c.kubectl("get", "namespaces"), "kube-system")
			// Bounds the wait only: a server that has not answered in 30 s never will.
			_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer while the body is incomplete: %v", err)
			}
			answered := time.Since(start)
			var status metav1.Status
			if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
				t.Fatalf("answer %d is not a Status: %v", resp.StatusCode, err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.code || status.Reason != tc.reason {
				t.Fatalf("got %d %q (%s), want %d %q", resp.StatusCode, status.Reason, status.Message, tc.code, tc.reason)
			}
			// Closed: an end (FIN), or a reset when trickled bytes were left unread at the close.
			if _, err := io.Copy(io.Discard, br); err != nil && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("the connection was not closed after the answer: %v", err)
			}
			t.Logf("answered %d after %v, connection closed after %v (request timeout %v)",
				resp.StatusCode, answered.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), requestTimeout)
		})
	}
	mustContain(t, c.kubectl("get", "--raw", "/readyz"), "ok")
}

// trickle writes one more byte of a body to conn every 200 ms until stopped; stop waits for the
// writer to end.
func trickle(conn net.Conn) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if _, err := io.WriteString(conn, " "); err != nil {
					return
				}
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}
