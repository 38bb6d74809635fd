package apiserver

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// DefaultRequestTimeout is kube-apiserver's --request-timeout: how long a request that is not
// long-running may take before it is answered 504.
const DefaultRequestTimeout = 60 * time.Second

// longRunning reports whether a request streams for as long as the client wants (watches, logs,
// exec/attach/port-forward and the proxies): those are bounded by their own timeouts
// (timeoutSeconds, MinRequestTimeout) and never by the request timeout. The set is
// kube-apiserver's: the watch and proxy verbs, and the attach, exec, log, portforward and proxy
// subresources.
func longRunning(info *RequestInfo) bool {
	if !info.IsResourceRequest {
		return false
	}
	switch info.Verb {
	case "watch", "proxy":
		return true
	}
	switch info.Subresource {
	case "attach", "exec", "log", "portforward", "proxy":
		return true
	}
	return false
}

// requestTimeout is the time a request may take: the `timeout` query parameter when it is positive
// and shorter than the server's limit, else the limit (a timeout of 0s asks for none of the
// client's own). A malformed parameter is a 400, as in Kubernetes.
func (s *Server) requestTimeout(r *http.Request) (time.Duration, error) {
	limit := s.cfg.RequestTimeout
	v := r.URL.Query().Get("timeout")
	if v == "" {
		return limit, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid timeout specified in the request URL: %q", v))
	}
	if d <= 0 {
		return limit, nil
	}
	return min(d, limit), nil
}

// serveWithTimeout runs serve with a deadline of d. The request's context ends at the deadline,
// and so do reads of its body (a client that sends a body slowly holds nothing past it). When the
// deadline passes before serve has begun its response, the client gets a 504 Timeout Status and
// whatever serve writes later is dropped; a response already under way (a large LIST being
// streamed) is left to finish, cut only by the cancelled context.
func (s *Server) serveWithTimeout(w http.ResponseWriter, r *http.Request, d time.Duration, serve func(http.ResponseWriter, *http.Request)) {
	deadline := time.Now().Add(d)
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	defer cancel()
	if r.ContentLength != 0 {
		// The body's reads end at the deadline. Only a request with a body: for one without,
		// net/http is already reading the connection in the background (to notice a client that
		// goes away), and that read failing at the deadline would be taken for a closed connection,
		// which cancels the context of every later request on a kept-alive HTTP/1.x connection.
		// Once a body has been read whole, net/http clears the deadline for that background read.
		// Not every ResponseWriter supports deadlines (tests' recorders); the context still applies.
		_ = http.NewResponseController(w).SetReadDeadline(deadline)
	}
	tw := &timeoutWriter{w: w, header: w.Header().Clone(), deadline: deadline}
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		serve(tw, r.WithContext(ctx))
	}()
	select {
	case p := <-done:
		if p != nil {
			panic(p)
		}
		if !tw.dropped() {
			return
		}
		// The handler ended past the deadline with an answer that yielded to the timeout.
	case <-ctx.Done():
	}
	if !tw.timeOut() {
		// The handler had begun answering: let it end (its context is cancelled, so it will).
		if p := <-done; p != nil {
			panic(p)
		}
		return
	}
	// No check for a client that went away: a write to a gone client fails harmlessly.
	s.writeError(w, r, apierrors.NewTimeoutError("request did not complete within requested timeout - "+ctx.Err().Error(), 0))
}

// timeoutWriter stands between a handler running under a deadline and the real ResponseWriter,
// so that exactly one of them answers: the handler, if it starts before the deadline, or the
// timeout. The handler gets its own header map, copied over when it starts its answer, so the
// timeout path never races with it on headers.
type timeoutWriter struct {
	w        http.ResponseWriter
	deadline time.Time
	mu       sync.Mutex
	header   http.Header
	// wroteHeader: the handler's answer has begun on w. timedOut: the deadline won; the handler's
	// writes are dropped.
	wroteHeader, timedOut bool
}

func (tw *timeoutWriter) Header() http.Header { return tw.header }

func (tw *timeoutWriter) WriteHeader(code int) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.writeHeaderLocked(code)
}

// writeHeaderLocked begins the handler's answer unless the deadline has passed: a handler that
// only noticed its cancelled context or its body's read deadline (and would answer 500 or 400 for
// it) yields to the 504.
func (tw *timeoutWriter) writeHeaderLocked(code int) {
	if tw.timedOut || tw.wroteHeader {
		return
	}
	if !time.Now().Before(tw.deadline) {
		tw.timedOut = true
		return
	}
	tw.wroteHeader = true
	dst := tw.w.Header()
	clear(dst)
	maps.Copy(dst, tw.header)
	tw.w.WriteHeader(code)
}

func (tw *timeoutWriter) Write(b []byte) (int, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.writeHeaderLocked(http.StatusOK)
	if tw.timedOut {
		return 0, http.ErrHandlerTimeout
	}
	return tw.w.Write(b)
}

func (tw *timeoutWriter) Flush() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.wroteHeader {
		if f, ok := tw.w.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// timeOut marks the request timed out unless the handler's answer has begun; it reports whether
// the timeout is the one to answer.
func (tw *timeoutWriter) timeOut() bool {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.wroteHeader {
		return false
	}
	tw.timedOut = true
	return true
}

// dropped reports whether the handler's answer was dropped for the timeout's.
func (tw *timeoutWriter) dropped() bool {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return tw.timedOut
}
