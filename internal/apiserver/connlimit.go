package apiserver

import (
	"net"
	"sync"
	"sync/atomic"
)

// ConnLimits bounds the connections the API server holds open, so that idle or slow clients
// cannot use up the process's file descriptors (which the embedded etcd needs for its WAL: when
// they ran out, the whole node exited).
type ConnLimits struct {
	// PerClient bounds the connections from one client IP address (0: unbounded).
	PerClient int
	// Total bounds all connections (0: unbounded).
	Total int
}

// LimitListener accepts connections from ln within limits. A connection over a limit is closed at
// once, so its client sees a reset rather than hanging in the accept backlog; rejected counts the
// refusals.
func LimitListener(ln net.Listener, limits ConnLimits, rejected func(reason string)) net.Listener {
	if rejected == nil {
		rejected = func(string) {}
	}
	return &limitListener{Listener: ln, limits: limits, perClient: map[string]int{}, rejected: rejected}
}

type limitListener struct {
	net.Listener
	limits   ConnLimits
	rejected func(reason string)

	mu        sync.Mutex
	total     int
	perClient map[string]int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client := clientIP(conn.RemoteAddr())
		if reason := l.admit(client); reason != "" {
			l.rejected(reason)
			conn.Close()
			continue
		}
		return &limitedConn{Conn: conn, release: func() { l.release(client) }}, nil
	}
}

// admit takes a place for a connection from client, or says which limit refuses it.
func (l *limitListener) admit(client string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.limits.Total > 0 && l.total >= l.limits.Total {
		return "total"
	}
	if l.limits.PerClient > 0 && l.perClient[client] >= l.limits.PerClient {
		return "per-client"
	}
	l.total++
	l.perClient[client]++
	return ""
}

func (l *limitListener) release(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.perClient[client]--; l.perClient[client] <= 0 {
		delete(l.perClient, client)
	}
}

// open reports the connections held, in total and from client (for tests).
func (l *limitListener) open(client string) (total, fromClient int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.perClient[client]
}

func clientIP(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

// limitedConn gives its place back once, however often it is closed (net/http and crypto/tls
// may both close it).
type limitedConn struct {
	net.Conn
	closed  atomic.Bool
	release func()
}

func (c *limitedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.release()
	}
	return c.Conn.Close()
}
