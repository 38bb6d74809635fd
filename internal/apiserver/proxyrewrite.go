package apiserver

import (
	"compress/flate"
	"compress/gzip"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// The proxy subresources hand a backend's pages to a browser under the API server's path
// (/api/v1/namespaces/ns/pods/name/proxy/...), so, as kube-apiserver does, links in HTML answers
// and redirects that point at the backend's root are rewritten to stay under that prefix, the
// backend learns the original request through X-Forwarded-* headers, and its CORS headers are
// dropped (the API server's origin policy applies, not the pod's).

// linkAttributes are the attributes that hold a URL, per element: the set kube-apiserver rewrites.
var linkAttributes = map[atom.Atom][]string{
	atom.A: {"href"}, atom.Applet: {"codebase"}, atom.Area: {"href"}, atom.Audio: {"src"},
	atom.Base: {"href"}, atom.Blockquote: {"cite"}, atom.Body: {"background"},
	atom.Button: {"formaction"}, atom.Command: {"icon"}, atom.Del: {"cite"}, atom.Embed: {"src"},
	atom.Form: {"action"}, atom.Frame: {"longdesc", "src"}, atom.Head: {"profile"},
	atom.Html: {"manifest"}, atom.Iframe: {"longdesc", "src"},
	atom.Img: {"longdesc", "src", "usemap"}, atom.Input: {"src", "usemap", "formaction"},
	atom.Ins: {"cite"}, atom.Link: {"href"}, atom.Object: {"classid", "codebase", "data", "usemap"},
	atom.Q: {"cite"}, atom.Script: {"src"}, atom.Source: {"src"}, atom.Video: {"poster", "src"},
}

// proxyRewrite is what one proxied request's answer is rewritten with.
type proxyRewrite struct {
	// prefix is the API path the backend's root appears under ("/api/v1/.../pods/web:8080/proxy").
	prefix string
	// backendHost is the host:port the request went to; requestHost the one the client used.
	backendHost, requestHost string
}

// rewriteURL maps a URL the backend wrote to the one a client of the API server must follow:
// absolute paths and absolute URLs to the backend itself get the prefix; relative references and
// other hosts' URLs are left alone.
func (p proxyRewrite) rewriteURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	if u.Host != "" && u.Host != p.backendHost && u.Host != p.requestHost {
		return raw
	}
	if !strings.HasPrefix(u.Path, "/") {
		return raw
	}
	// A URL naming the backend by host becomes a path on the API server.
	u.Scheme, u.Host = "", ""
	if !strings.HasPrefix(u.Path, p.prefix) {
		trailing := strings.HasSuffix(u.Path, "/")
		u.Path = path.Join(p.prefix, u.Path)
		if trailing && !strings.HasSuffix(u.Path, "/") {
			u.Path += "/"
		}
		u.RawPath = ""
	}
	return u.String()
}

// rewriteHTML copies an HTML document from r to w with the link attributes rewritten; everything
// else is copied byte for byte.
func (p proxyRewrite) rewriteHTML(w io.Writer, r io.Reader) error {
	z := html.NewTokenizer(r)
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if err := z.Err(); err != io.EOF {
				return err
			}
			return nil
		case html.StartTagToken, html.SelfClosingTagToken:
			raw := append([]byte(nil), z.Raw()...)
			tok := z.Token()
			attrs := linkAttributes[tok.DataAtom]
			changed := false
			for i, a := range tok.Attr {
				if a.Namespace != "" || !containsFold(attrs, a.Key) {
					continue
				}
				if v := p.rewriteURL(a.Val); v != a.Val {
					tok.Attr[i].Val, changed = v, true
				}
			}
			if changed {
				raw = []byte(tok.String())
			}
			if _, err := w.Write(raw); err != nil {
				return err
			}
		default:
			if _, err := w.Write(z.Raw()); err != nil {
				return err
			}
		}
	}
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

// forwardedHeaders tells the backend what the client asked for, as kube-apiserver's proxy does.
func (p proxyRewrite) forwardedHeaders(out *http.Request, in *http.Request) {
	uri := path.Join(p.prefix, out.URL.EscapedPath())
	if strings.HasSuffix(out.URL.Path, "/") && !strings.HasSuffix(uri, "/") {
		uri += "/"
	}
	out.Header.Set("X-Forwarded-Uri", uri)
	out.Header.Set("X-Forwarded-Host", in.Host)
	proto := "https"
	if in.TLS == nil {
		proto = "http"
	}
	out.Header.Set("X-Forwarded-Proto", proto)
}

// modifyResponse rewrites a backend's redirect or HTML answer and drops its CORS headers.
func (p proxyRewrite) modifyResponse(resp *http.Response) error {
	for _, h := range []string{"Access-Control-Allow-Credentials", "Access-Control-Allow-Headers", "Access-Control-Allow-Methods", "Access-Control-Allow-Origin", "Access-Control-Expose-Headers"} {
		resp.Header.Del(h)
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		resp.Header.Set("Location", p.rewriteURL(loc))
		return nil
	}
	ctype, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	if strings.TrimSpace(ctype) != "text/html" || resp.Body == nil || resp.Body == http.NoBody {
		return nil
	}
	var body io.ReadCloser
	switch enc := resp.Header.Get("Content-Encoding"); enc {
	case "":
		body = resp.Body
	case "gzip":
		gz, err := gzip.NewReader(resp.Body)
		if err != nil {
			// Not what it says it is: pass it on untouched.
			return nil
		}
		body = readCloser{gz, resp.Body}
	case "deflate":
		body = readCloser{flate.NewReader(resp.Body), resp.Body}
	default:
		return nil
	}
	// The page is rewritten as it streams: a large page is never held whole in memory.
	pr, pw := io.Pipe()
	go func() {
		defer body.Close()
		pw.CloseWithError(p.rewriteHTML(pw, body))
	}()
	resp.Body = pr
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	return nil
}

// readCloser reads from a decompressor and closes the body beneath it.
type readCloser struct {
	io.Reader
	closer io.Closer
}

func (r readCloser) Close() error { return r.closer.Close() }

// proxyRootRedirect answers a GET or HEAD that ends at ".../proxy" with a 301 to ".../proxy/", as
// Kubernetes does, so that a backend's relative links resolve under the proxy path. It reports
// whether it answered.
func proxyRootRedirect(w http.ResponseWriter, r *http.Request, rest string) bool {
	if rest != "" || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return false
	}
	loc := r.URL.Path + "/"
	if r.URL.RawQuery != "" {
		loc += "?" + r.URL.RawQuery
	}
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusMovedPermanently)
	return true
}
