package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3rpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/test/bufconn"
)

// InProcessEndpoint is the endpoint of a client made by Member.InProcessClient. It names no
// address: the client's dialer connects to the member's in-memory listener whatever it asks for.
const InProcessEndpoint = "http://in-process-member"

// inProcessBuffer is the size of each direction's ring buffer of an in-memory connection, made
// whole when the connection opens: a writer blocks when its reader is this far behind, as a TCP
// socket's buffer would make it. Sixteen of gRPC's 16 KiB frames.
const inProcessBuffer = 256 << 10

// inProcessServer serves one embedded etcd's gRPC API to clients in this process over in-memory
// connections. It is etcd's own gRPC server (v3rpc.Server) with etcd's interceptors, so a request
// meets exactly what it would on the client port: the require-leader check refuses a watch or a
// read at once when the member has lost its leader, the quota and the request size limits hold.
// Only TLS, TCP and the kernel are left out. The API server embedding a member used etcd's
// v3client for that once and gave it up: that client calls the server's methods directly and
// skips the interceptors (SCHEDULER.md). Nothing outside the process can reach the listener, so
// leaving TLS out opens nothing.
type inProcessServer struct {
	lis  *bufconn.Listener
	srv  *grpc.Server
	done chan struct{}
}

// serveInProcess starts e's in-process gRPC server, with the keepalive rules e's client port has.
func serveInProcess(e *embed.Etcd) *inProcessServer {
	cfg := e.Config()
	var opts []grpc.ServerOption
	if cfg.GRPCKeepAliveMinTime > 0 {
		opts = append(opts, grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: cfg.GRPCKeepAliveMinTime}))
	}
	if cfg.GRPCKeepAliveInterval > 0 && cfg.GRPCKeepAliveTimeout > 0 {
		opts = append(opts, grpc.KeepaliveParams(keepalive.ServerParameters{Time: cfg.GRPCKeepAliveInterval, Timeout: cfg.GRPCKeepAliveTimeout}))
	}
	s := &inProcessServer{
		lis:  bufconn.Listen(inProcessBuffer),
		srv:  v3rpc.Server(e.Server, nil, nil, opts...),
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		// Serve returns when stop closes the listener; its error then says only that.
		_ = s.srv.Serve(s.lis)
	}()
	return s
}

// stop closes the server's connections and waits for it: their clients see the connection
// break, as when etcd's client port closes, and dial again.
func (s *inProcessServer) stop() {
	s.srv.Stop()
	<-s.done
}

// dialInProcess connects to the running etcd's in-process server. addr is ignored: there is one.
func (m *Member) dialInProcess(ctx context.Context, _ string) (net.Conn, error) {
	m.mu.Lock()
	s := m.inProcess
	m.mu.Unlock()
	if s == nil {
		return nil, errors.New("etcd member not serving: stopped or restarting")
	}
	conn, err := s.lis.DialContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("etcd member %s in process: %w", m.cfg.Name, err)
	}
	return conn, nil
}

// InProcessClient returns a client of this member that talks to it in process (its endpoint is
// InProcessEndpoint); the caller closes it. It survives the member's restarts as a client of the
// client port does, dialling again. Its dialer reaches this member alone: work that names
// members by their URLs (Status of each member) needs a client of the client port.
func (m *Member) InProcessClient(log *slog.Logger) (*clientv3.Client, error) {
	return NewClient([]string{InProcessEndpoint}, nil, log, grpc.WithContextDialer(m.dialInProcess))
}
