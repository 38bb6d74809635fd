// Package pkitest holds test-only helpers for TLS endpoints: a client restricted to RSA cipher
// suites, as busybox wget's built-in TLS and other limited clients are, and one TLS handshake on
// loopback against a server's tls.Config. Production code must not import it.
package pkitest
