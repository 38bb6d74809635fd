package e2e

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
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
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// adminTLS is the admin's TLS client configuration from the node's kubeconfig.
func (c *cluster) adminTLS(t *testing.T) (*tls.Config, string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg.NextProtos = []string{"http/1.1"}
	return tlsCfg, strings.TrimPrefix(cfg.Host, "https://")
}

// TestServerLimits: a real node under connection and slow-client abuse keeps serving others;
// slow bodies get a 504, idle keep-alive connections are closed after the idle timeout, one
// address cannot hold more than its share of connections, and a flood of connections does not
// stop the node.
func TestServerLimits(t *testing.T) {
	const perClient = 200
	c := newCluster(t, "--request-timeout", "3s", "--idle-connection-timeout", "3s",
		"--max-connections-per-client", fmt.Sprint(perClient))
	// Straight to the API server, not through the node-local balancer: the limits are the API
	// server's, and through the balancer every client would arrive from its address.
	tlsCfg, _ := c.adminTLS(t)
	port := strconv.Itoa(c.ports[0])
	addr := net.JoinHostPort("127.0.0.1", port)

	t.Run("slow body gets 504 while others are served", func(t *testing.T) {
		conn, err := tls.Dial("tcp", addr, tlsCfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", addr)
		mustContain(t, c.kubectl("get", "namespaces"), "kube-system")
		_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer to a stalled body: %v", err)
		}
		defer resp.Body.Close()
		var status metav1.Status
		if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
			t.Fatalf("answer is not a Status: %v", err)
		}
		if resp.StatusCode != http.StatusGatewayTimeout || status.Reason != metav1.StatusReasonTimeout {
			t.Fatalf("stalled body: %d %+v, want 504 Timeout", resp.StatusCode, status)
		}
	})

	t.Run("idle keep-alive connections are limited per address and closed when idle", func(t *testing.T) {
		anon := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}} //nolint:gosec // an anonymous attacker
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 10 * time.Second}
		var held []*tls.Conn
		refused := 0
		for range perClient + 100 {
			conn, err := tls.DialWithDialer(dialer, "tcp", net.JoinHostPort("127.0.0.1", port), anon)
			if err != nil {
				refused++
				continue
			}
			fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
			_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				conn.Close()
				refused++
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			held = append(held, conn)
		}
		t.Cleanup(func() {
			for _, c := range held {
				c.Close()
			}
		})
		if len(held) > perClient || refused < 100 {
			t.Fatalf("one address held %d connections (%d refused); the limit is %d", len(held), refused, perClient)
		}
		// The node's own clients, from another address, are unaffected.
		mustContain(t, c.kubectl("get", "namespaces"), "kube-system")
		// Idle past the timeout: the server closes every one of them.
		var wg sync.WaitGroup
		var mu sync.Mutex
		open := 0
		for _, conn := range held {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = conn.SetReadDeadline(time.Now().Add(45 * time.Second))
				if _, err := conn.Read(make([]byte, 1)); err != nil {
					if ne, ok := err.(net.Error); ok && ne.Timeout() {
						mu.Lock()
						open++
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		if open > 0 {
			t.Fatalf("%d idle keep-alive connections were still open 45 s after a 3 s idle timeout", open)
		}
	})

	t.Run("a flood of connections does not stop the node", func(t *testing.T) {
		var lim syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		flood := min(20000, int(lim.Cur)-1000)
		var conns []net.Conn
		t.Cleanup(func() {
			for _, c := range conns {
				c.Close()
			}
		})
		// From ten addresses: each may hold its share; the rest are closed on accept.
		for i := range flood {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 3, byte(1+i%10))}, Timeout: 5 * time.Second}
			conn, err := d.Dial("tcp", net.JoinHostPort("127.0.0.1", port))
			if err != nil {
				continue // a full accept backlog refuses some: that is the point
			}
			conns = append(conns, conn)
		}
		t.Logf("%d connections attempted, %d dialled", flood, len(conns))
		mustContain(t, c.kubectl("get", "namespaces"), "kube-system")
		mustContain(t, c.kubectl("create", "configmap", "after-flood", "--from-literal=a=b"), "created")
		if c.cmd.ProcessState != nil {
			t.Fatalf("the node exited under the flood; log:\n%s", c.log())
		}
	})
}
