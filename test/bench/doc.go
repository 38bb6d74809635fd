// Package bench measures a running skiff API server end to end, the way a client sees it: HTTPS,
// client certificates and client-go. It starts the server itself (the built binary on free loopback
// ports, or in-process through internal/cluster), so every figure includes TLS, authentication,
// admission, validation, storage encoding and etcd.
//
// Two measurements: creates (throughput and latency of 1 KiB ConfigMap creates at a given
// concurrency) and watch fan-out (one writer, many watchers; events delivered per second and the
// delay from a write's acknowledgement to its delivery at each watcher).
//
// It must not reach into the server's internals beyond starting it; it is a client.
package bench
