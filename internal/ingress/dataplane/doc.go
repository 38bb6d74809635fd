// Package dataplane is skiff's built-in HTTP data plane: it serves a routes.Table on Go's own
// HTTP stack, one listener per port of the table, and forwards requests straight to the pods
// the table names (no hop through a Service's cluster IP).
//
// It speaks HTTP/1.1, HTTP/2 over TLS (ALPN) and h2c with prior knowledge; it picks the TLS
// certificate by SNI from the current table at each handshake (GetCertificate), so a rotated
// Secret is served from the next handshake without a restart; it passes WebSocket and other
// upgrades through and streams bodies (httputil.ReverseProxy flushes at once for responses of
// unknown length and event streams). Set swaps the whole table atomically: a request in flight
// finishes on the table it started with, an open connection is never closed for a route or
// certificate change, and only a port the new table drops has its server shut down gracefully.
//
// Decide, then do: decide is the pure routing decision (virtual host, route, backend, or the
// answer 404/500/503/redirect) for a request against a compiled listener, table-tested; the
// Server is the thin layer that listens, proxies, logs (debug level) and counts.
//
// It must not reach the cluster (the controllers in internal/ingress and the Gateway controller
// build the tables), keep package-level mutable state, or leave a goroutine it started running
// after Run returns.
package dataplane
