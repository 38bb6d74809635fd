package pkitest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
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

// BusyboxSuites are the cipher suites busybox 1.35's wget offers (its built-in TLS, used when the
// image has no openssl), in its order; 0x003D is TLS_RSA_WITH_AES_256_CBC_SHA256, which Go lacks.
func BusyboxSuites() []uint16 {
	return []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_RSA_WITH_AES_128_CBC_SHA256, 0x003D, tls.TLS_RSA_WITH_AES_128_GCM_SHA256,
	}
}

// LegacyHello sends server (on loopback) the ClientHello of a TLS 1.2 client without the
// signature_algorithms extension, offering suites with the P-256 and X25519 groups, as busybox
// wget's built-in TLS does (Go's client always sends the extension, so it cannot stand in). It
// returns the cipher suite of the server's ServerHello, or an error naming the alert the server
// answered with (40 is handshake_failure).
func LegacyHello(server *tls.Config, suites []uint16) (uint16, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	serverDone := make(chan struct{})
	go func() {
		defer close(serverDone)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_ = tls.Server(conn, server).HandshakeContext(ctx) // ends when the client hangs up
	}()
	defer func() { <-serverDone }()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		ln.Close()
		return 0, err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if _, err := conn.Write(legacyClientHello(suites)); err != nil {
		return 0, fmt.Errorf("send ClientHello: %w", err)
	}
	return readServerHello(conn)
}

// legacyClientHello is a TLS 1.2 ClientHello record: no session, null compression, and the
// supported_groups extension (P-256, X25519) alone.
func legacyClientHello(suites []uint16) []byte {
	u16 := func(b []byte, v int) []byte { return append(b, byte(v>>8), byte(v)) }
	body := []byte{0x03, 0x03}               // client_version TLS 1.2
	body = append(body, make([]byte, 32)...) // random (a fixed one does for a negotiation)
	body = append(body, 0)                   // session_id
	body = u16(body, 2*len(suites))
	for _, s := range suites {
		body = u16(body, int(s))
	}
	body = append(body, 1, 0) // compression: null
	groups := []byte{0x00, 0x0a, 0x00, 0x06, 0x00, 0x04, 0x00, 0x17, 0x00, 0x1d}
	body = u16(body, len(groups))
	body = append(body, groups...)
	hs := append([]byte{1, 0}, byte(len(body)>>8), byte(len(body))) // client_hello, 24-bit length
	hs = append(hs, body...)
	rec := u16([]byte{22, 0x03, 0x01}, len(hs)) // handshake record
	return append(rec, hs...)
}

// readServerHello reads the server's flight up to its ServerHelloDone (its key exchange is
// signed by then, which is where a server that cannot sign for the client fails) and returns the
// ServerHello's cipher suite, or an error naming the alert the server sent instead.
func readServerHello(conn net.Conn) (uint16, error) {
	var suite uint16
	var messages []byte
	for {
		header := make([]byte, 5)
		if _, err := io.ReadFull(conn, header); err != nil {
			return 0, fmt.Errorf("read the server's answer: %w", err)
		}
		body := make([]byte, int(header[3])<<8|int(header[4]))
		if _, err := io.ReadFull(conn, body); err != nil {
			return 0, fmt.Errorf("read the server's answer: %w", err)
		}
		switch {
		case header[0] == 21 && len(body) == 2:
			return 0, fmt.Errorf("alert code %d", body[1])
		case header[0] != 22:
			return 0, fmt.Errorf("record type %d before ServerHelloDone", header[0])
		}
		messages = append(messages, body...)
		// Handshake messages: a type, a 24-bit length, the body; one may span records.
		for len(messages) >= 4 {
			n := int(messages[1])<<16 | int(messages[2])<<8 | int(messages[3])
			if len(messages) < 4+n {
				break
			}
			msg := messages[:4+n]
			messages = messages[4+n:]
			switch msg[0] {
			case 2: // ServerHello: version, random, session id, then the suite
				at := 4 + 2 + 32
				if len(msg) < at+1 || len(msg) < at+1+int(msg[at])+2 {
					return 0, errors.New("short ServerHello")
				}
				at += 1 + int(msg[at])
				suite = uint16(msg[at])<<8 | uint16(msg[at+1])
			case 14: // ServerHelloDone
				return suite, nil
			}
		}
	}
}
