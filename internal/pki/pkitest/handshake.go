package pkitest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"
)

// RSAOnlyClient is a TLS 1.2 client that offers only RSA-authenticated cipher suites, like
// busybox wget's built-in TLS in images whose busybox predates its ECDSA support: a server with
// only an ECDSA certificate fails its handshake (alert 40, handshake_failure). It verifies the
// server's chain against roots for serverName; roots nil skips the check, as wget
// --no-check-certificate does.
func RSAOnlyClient(roots *x509.CertPool, serverName string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		MaxVersion: tls.VersionTLS12,
		CipherSuites: []uint16{
			tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
		},
		RootCAs:            roots,
		ServerName:         serverName,
		InsecureSkipVerify: roots == nil, //nolint:gosec // a client like wget --no-check-certificate, on purpose
	}
}

// Handshake runs a TLS handshake between server and client over a loopback TCP connection (its
// buffers let each side finish its flight without the other reading, which net.Pipe does not) and
// returns what the client saw: the connection state, or the handshake's errors, the client's and
// the server's. Both sides are done when it returns.
func Handshake(server, client *tls.Config) (tls.ConnectionState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return tls.ConnectionState{}, fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	serverDone := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			serverDone <- err
			return
		}
		defer conn.Close()
		serverDone <- tls.Server(conn, server).HandshakeContext(ctx)
	}()
	var clientErr error
	var state tls.ConnectionState
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		clientErr = err
		ln.Close() // the server's Accept returns
	} else {
		cli := tls.Client(conn, client)
		clientErr = cli.HandshakeContext(ctx)
		state = cli.ConnectionState()
		conn.Close()
	}
	serverErr := <-serverDone
	switch {
	case clientErr == nil && serverErr == nil:
		return state, nil
	case clientErr == nil:
		return state, fmt.Errorf("server: %w", serverErr)
	case serverErr == nil:
		return state, fmt.Errorf("client: %w", clientErr)
	default:
		return state, errors.Join(fmt.Errorf("client: %w", clientErr), fmt.Errorf("server: %w", serverErr))
	}
}

// PublicKeyAlgorithm names the key of the certificate the server presented ("" when none).
func PublicKeyAlgorithm(state tls.ConnectionState) string {
	if len(state.PeerCertificates) == 0 {
		return ""
	}
	return state.PeerCertificates[0].PublicKeyAlgorithm.String()
}
