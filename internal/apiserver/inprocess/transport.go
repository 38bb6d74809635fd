package inprocess

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
)

// remoteAddr is the client address the handler sees: the loopback address the request would have
// come from over the network (audit records it as the source IP).
const remoteAddr = "127.0.0.1:0"

// errAborted is what the client reads when the handler aborted the response mid-stream
// (http.ErrAbortHandler), as a reset connection would show it.
var errAborted = errors.New("inprocess: the API server aborted the response")

// Transport is an http.RoundTripper that serves each request by calling handler in the caller's
// process, as the holder of the client certificate chain its Identity gives at that request.
type Transport struct {
	handler  http.Handler
	identity Identity
}

var _ http.RoundTripper = (*Transport)(nil)

// Identity is the client certificate chain a request presents: leaf first, then the CA that
// signed it. It is asked at every request, as a TLS client's certificate callback is at every
// handshake, so a certificate renewed on disk (or re-issued by a CA rotation) is presented from
// the next request on; a chain fixed when the client was made is refused once a rotation
// retires its CA.
type Identity func() ([]*x509.Certificate, error)

// Fixed is the Identity of one chain for the client's whole life (tests, one-off clients).
func Fixed(chain []*x509.Certificate) Identity {
	return func() ([]*x509.Certificate, error) { return chain, nil }
}

// New returns a Transport calling handler as the client identity names. The handler sees the
// chain as a TLS handshake that verified it would present it; it still authenticates the request
// itself.
func New(handler http.Handler, identity Identity) (*Transport, error) {
	if handler == nil {
		return nil, errors.New("inprocess: no handler")
	}
	if identity == nil {
		return nil, errors.New("inprocess: no client identity")
	}
	return &Transport{handler: handler, identity: identity}, nil
}

// connectionState is the TLS state a handshake presenting chain would leave.
func connectionState(chain []*x509.Certificate) (*tls.ConnectionState, error) {
	if len(chain) == 0 {
		return nil, errors.New("inprocess: no client certificate")
	}
	return &tls.ConnectionState{
		Version:           tls.VersionTLS13,
		HandshakeComplete: true,
		PeerCertificates:  chain[:1:1],
		VerifiedChains:    [][]*x509.Certificate{chain},
	}, nil
}

// RoundTrip hands req to the handler on a goroutine of its own and returns as soon as the handler
// has sent the response's status and headers; the body streams from the handler as it writes.
// Closing the body (or cancelling req's context) cancels the handler's request context.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("inprocess: request has no URL")
	}
	ctx, cancel := context.WithCancel(req.Context())
	sreq, err := t.serverRequest(ctx, req)
	if err != nil {
		cancel()
		closeBody(req)
		return nil, err
	}
	w := newResponseWriter()
	go func() {
		defer closeBody(req)
		defer func() {
			// Server.ServeHTTP recovers its own panics and re-panics only http.ErrAbortHandler,
			// which net/http's server would swallow after resetting the stream: so do we.
			if p := recover(); p != nil {
				w.finish(fmt.Errorf("%w: %v", errAborted, p))
				return
			}
			w.finish(nil)
		}()
		t.handler.ServeHTTP(w, sreq)
	}()
	select {
	case <-w.committed:
	case <-req.Context().Done():
		// Nobody will read the body: the handler's writes must fail, not block.
		cancel()
		_ = w.reader.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	return &http.Response{
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sent,
		Body:          &responseBody{PipeReader: w.reader, cancel: cancel},
		ContentLength: contentLength(w.sent),
		Request:       req,
	}, nil
}

// serverRequest is req as the handler would receive it from net/http's server: a path-and-query
// URL, RequestURI set, the client's address and the verified TLS state.
func (t *Transport) serverRequest(ctx context.Context, req *http.Request) (*http.Request, error) {
	uri := req.URL.RequestURI()
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		return nil, fmt.Errorf("inprocess: request URI %q: %w", uri, err)
	}
	sreq := req.Clone(ctx)
	sreq.URL = u
	sreq.RequestURI = uri
	sreq.Proto, sreq.ProtoMajor, sreq.ProtoMinor = "HTTP/1.1", 1, 1
	sreq.RemoteAddr = remoteAddr
	chain, err := t.identity()
	if err != nil {
		return nil, fmt.Errorf("inprocess: client certificate: %w", err)
	}
	if sreq.TLS, err = connectionState(chain); err != nil {
		return nil, err
	}
	if sreq.Host == "" {
		sreq.Host = req.URL.Host
	}
	if sreq.Body == nil {
		sreq.Body = http.NoBody
	} else {
		// The handler reads the client's body; closing it stays the transport's job (below).
		sreq.Body = io.NopCloser(req.Body)
	}
	return sreq, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

func contentLength(h http.Header) int64 {
	if v := h.Get("Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			return n
		}
	}
	return -1
}

// responseBody is the client's end of the pipe; closing it tells the handler the client is gone.
type responseBody struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (b *responseBody) Close() error {
	b.cancel()
	return b.PipeReader.Close()
}

// responseWriter is the handler's end: headers until the status is committed, then a pipe.
type responseWriter struct {
	header    http.Header
	reader    *io.PipeReader
	writer    *io.PipeWriter
	once      sync.Once
	committed chan struct{}
	status    int
	sent      http.Header
}

func newResponseWriter() *responseWriter {
	r, w := io.Pipe()
	return &responseWriter{header: http.Header{}, reader: r, writer: w, committed: make(chan struct{})}
}

func (w *responseWriter) Header() http.Header { return w.header }

// WriteHeader commits the status and a copy of the headers; later calls change nothing, as with
// net/http (informational 1xx statuses are not passed on: nothing in the API server sends them).
func (w *responseWriter) WriteHeader(code int) {
	if code < 200 || code > 999 {
		return
	}
	w.commit(code, nil)
}

func (w *responseWriter) commit(code int, firstWrite []byte) {
	w.once.Do(func() {
		if firstWrite != nil && !hasHeader(w.header, "Content-Type") {
			// net/http's server sniffs an unset Content-Type from the first bytes; clients decode by it.
			w.header.Set("Content-Type", http.DetectContentType(firstWrite))
		}
		w.status = code
		w.sent = w.header.Clone()
		close(w.committed)
	})
}

// hasHeader tells an absent header from one set to nothing (which disables sniffing in net/http).
func hasHeader(h http.Header, key string) bool {
	_, ok := h[http.CanonicalHeaderKey(key)]
	return ok
}

func (w *responseWriter) Write(p []byte) (int, error) {
	w.commit(http.StatusOK, p)
	if len(p) == 0 {
		return 0, nil
	}
	return w.writer.Write(p)
}

// Flush commits the headers; written bytes are already with the reader (the pipe has no buffer).
func (w *responseWriter) Flush() { w.commit(http.StatusOK, nil) }

// finish ends the response when the handler returns: the status (200 if none was written) and end
// of body, or err for an aborted response.
func (w *responseWriter) finish(err error) {
	w.commit(http.StatusOK, nil)
	if err != nil {
		_ = w.writer.CloseWithError(err)
		return
	}
	_ = w.writer.Close()
}
