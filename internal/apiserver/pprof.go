package apiserver

import (
	"net/http"
	"net/http/pprof"
	"strings"
)

func servePprof(w http.ResponseWriter, r *http.Request) {
	switch name := strings.TrimPrefix(r.URL.Path, "/debug/pprof/"); name {
	case "cmdline":
		pprof.Cmdline(w, r)
	case "profile":
		pprof.Profile(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "trace":
		pprof.Trace(w, r)
	case "", "/debug/pprof":
		pprof.Index(w, r)
	default:
		pprof.Handler(name).ServeHTTP(w, r)
	}
}
