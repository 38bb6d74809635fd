package apiserver

import (
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// A request's body and an answer that does not wait for it.
//
// Before an HTTP/1.x server sends the headers of a response, net/http reads whatever the handler
// left of the request's body (up to 256 KiB), so that the connection can carry the next request;
// it sets no deadline of its own for that read. An answer decided on the headers alone (401, 403,
// 429, a 404 for an unknown resource, a 413 for a declared length over the limit) to a request
// whose body never arrives was therefore never sent: an anonymous client that declared a body and
// sent one byte of it held a connection, a goroutine and their buffers for as long as it liked.
//
// So the server counts what the handler chain reads of every body. When an answer begins and part
// of the body may still be on its way, the rest is let go: the connection's read deadline is put
// in the past. What has already arrived is still taken from net/http's buffer (a client that sent
// its whole body at once keeps its connection); reading on fails at once, so net/http sends the
// answer with "Connection: close" and closes the connection. Requests that stream their body while
// they answer (exec, attach, port-forward, the proxies) are not counted: their body is theirs.

// bodyCounter is a request's body as the handler chain reads it, counting the bytes read and
// whether its end was seen. The handler reads it in its own goroutine (serveWithTimeout's) while
// the answer may begin in another (the timeout's), hence the atomics.
type bodyCounter struct {
	io.ReadCloser
	protoMajor    int
	contentLength int64
	read          atomic.Int64
	sawEOF        atomic.Bool
}

// countBody puts a bodyCounter in front of r's body; nil when the request has none.
func countBody(r *http.Request) *bodyCounter {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	b := &bodyCounter{ReadCloser: r.Body, protoMajor: r.ProtoMajor, contentLength: r.ContentLength}
	r.Body = b
	return b
}

func (b *bodyCounter) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read.Add(int64(n))
	if errors.Is(err, io.EOF) {
		b.sawEOF.Store(true)
	}
	return n, err
}

// unread reports whether part of the body may still be on its way (bodyLeftUnread).
func (b *bodyCounter) unread() bool {
	return bodyLeftUnread(b.protoMajor, b.contentLength, b.read.Load(), b.sawEOF.Load())
}

// bodyLeftUnread decides, when an answer begins, whether part of a request's body may still be on
// its way: an HTTP/1.x body whose declared length was not read whole, or a chunked one (length -1)
// whose end was not seen. HTTP/2 needs nothing: a stream's body the handler leaves is reset, not
// waited for, and its flow-control window bounds what is buffered meanwhile.
func bodyLeftUnread(protoMajor int, contentLength, read int64, sawEOF bool) bool {
	switch {
	case protoMajor != 1, contentLength == 0, sawEOF:
		return false
	case contentLength > 0:
		return read < contentLength
	default:
		return true
	}
}

// letBodyGo stops waiting for the rest of the request's body that w answers: reads of the
// connection fail from now on (the past deadline), so net/http sends the answer and closes the
// connection rather than reading on. A writer without a connection beneath it (tests' recorders,
// the in-process transport) has no deadline to set, and nothing waits there.
func letBodyGo(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Unix(1, 0))
}
