package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// Prefix is where the page is served, on the API server and on `skiff dashboard`.
const Prefix = "/dashboard/"

//go:embed assets
var embedded embed.FS

// IsAsset reports whether a request is for the page's static files, which are served without
// credentials (the page itself signs the user in): GET or HEAD of /dashboard or anything below.
func IsAsset(method, path string) bool {
	if method != http.MethodGet && method != http.MethodHead {
		return false
	}
	return path == strings.TrimSuffix(Prefix, "/") || strings.HasPrefix(path, Prefix)
}

// Assets serves the embedded page under Prefix (index.html at Prefix itself); /dashboard is
// redirected to /dashboard/. Anything but GET and HEAD is refused with 405.
func Assets() http.Handler {
	sub, err := fs.Sub(embedded, "assets")
	if err != nil {
		// The embedded tree is fixed at build time; a missing directory is a build bug.
		panic(err)
	}
	files := http.StripPrefix(Prefix, http.FileServer(http.FS(sub)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !IsAsset(r.Method, r.URL.Path) {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the dashboard serves only GET and HEAD", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
			return
		}
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		// Everything the page loads is its own: no inline script, no other origin.
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
