package cluster

import (
	"crypto/tls"
	"net/http"
	"syscall"
	"time"

	"github.com/skiff-sh/skiff/internal/apiserver"
)

// DefaultReadHeaderTimeout is how long a client has to send its request headers (kube-apiserver
// waits 32 s); a slower client's connection is closed.
const DefaultReadHeaderTimeout = 32 * time.Second

// apiServerHTTP is the API server's HTTP server with kube-apiserver's connection limits: headers
// within readHeader (DefaultReadHeaderTimeout when 0), keep-alive connections closed after idle, 1 MiB of headers, and up to 1,000
// concurrent HTTP/2 streams per connection (informers multiplex every watch of a client over one
// connection, so Go's default of 250 is too few for a controller manager).
func apiServerHTTP(handler http.Handler, tlsCfg *tls.Config, idle, readHeader time.Duration) *http.Server {
	if readHeader <= 0 {
		readHeader = DefaultReadHeaderTimeout
	}
	return &http.Server{
		Handler:           handler,
		TLSConfig:         tlsCfg,
		ReadHeaderTimeout: readHeader,
		IdleTimeout:       idle,
		MaxHeaderBytes:    1 << 20,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: 1000},
	}
}

// connLimits bounds the API server's connections: perClient from one address, and in total what
// leaves a quarter of the process's file descriptors (at least 1,024) to etcd, the kubelet and
// the rest, so a flood of connections is refused at the door instead of starving etcd's WAL. The
// Go runtime has already raised the soft RLIMIT_NOFILE to the hard limit at start (os does so on
// Linux since Go 1.19), so the limit read here is the most the process can have.
func connLimits(perClient int) apiserver.ConnLimits {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == ^uint64(0) {
		return apiserver.ConnLimits{PerClient: perClient}
	}
	fds := int(min(lim.Cur, 1<<30))
	total := max(fds-max(1024, fds/4), fds/2)
	return apiserver.ConnLimits{PerClient: perClient, Total: total}
}
