package apiserver

import "net/http"

// wrappedWriter is what every ResponseWriter wrapper of the handler chain embeds (the status
// recorder, the audit writer, the admission-warnings writer): watches and streamed responses must
// still flush through the wrapper, and exec, attach and port-forward upgrades must still reach the
// connection beneath it through http.ResponseController, which follows Unwrap.
type wrappedWriter struct {
	http.ResponseWriter
}

// Flush passes a flush through to the writer beneath, when it can flush.
func (w wrappedWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer beneath.
func (w wrappedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
