package dataplane

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/skiff-sh/skiff/internal/ingress/routes"
)

// decision is what to do with one request: forward it to endpoint of backend, or answer status
// (with location for a redirect).
type decision struct {
	route    *route
	backend  *backend
	endpoint int // index into backend.spec.Endpoints
	status   int
	location string
	// reason says why the request is answered rather than forwarded, for the access log.
	reason string
}

// decide routes r on listener l. pick(n) returns a number in [0, n): the weighted choice of a
// backend (random in the server, fixed in tests). It changes nothing but the chosen backend's
// round-robin counter.
func decide(l *listener, r *http.Request, scheme string, pick func(n int64) int64) decision {
	if l == nil {
		return decision{status: http.StatusNotFound, reason: "no listener"}
	}
	h := routes.SelectHost(l.spec.Hosts, routes.NormalizeHost(r.Host))
	if h < 0 {
		return decision{status: http.StatusNotFound, reason: "no host"}
	}
	for i := range l.hosts[h] {
		rt := &l.hosts[h][i]
		if rt.invalid != "" || !matches(rt, r) {
			continue
		}
		return decideRoute(rt, l.spec.Port, r, scheme, pick)
	}
	return decision{status: http.StatusNotFound, reason: "no route"}
}

func decideRoute(rt *route, port int32, r *http.Request, scheme string, pick func(n int64) int64) decision {
	d := decision{route: rt}
	for _, f := range rt.spec.Filters {
		if f.Type == routes.FilterRequestRedirect && f.RequestRedirect != nil {
			d.status, d.location = redirect(f.RequestRedirect, rt, port, r, scheme)
			d.reason = "redirect"
			return d
		}
	}
	if rt.weight == 0 {
		d.status, d.reason = http.StatusInternalServerError, "no usable backend"
		return d
	}
	n := pick(rt.weight)
	for i := range rt.backends {
		b := &rt.backends[i]
		if b.spec.Weight <= 0 {
			continue
		}
		if n < int64(b.spec.Weight) {
			d.backend = b
			break
		}
		n -= int64(b.spec.Weight)
	}
	switch {
	case d.backend == nil:
		d.status, d.reason = http.StatusInternalServerError, "no usable backend"
	case d.backend.spec.Invalid != "":
		d.status, d.reason = http.StatusInternalServerError, "invalid backend: "+d.backend.spec.Invalid
	case len(d.backend.spec.Endpoints) == 0:
		d.status, d.reason = http.StatusServiceUnavailable, "no endpoints"
	default:
		d.endpoint = int(d.backend.next.Add(1) % uint64(len(d.backend.spec.Endpoints)))
	}
	return d
}

func matches(rt *route, r *http.Request) bool {
	m := &rt.spec.Match
	p := r.URL.Path
	if p == "" {
		p = "/"
	}
	switch m.Path.Type {
	case routes.PathExact:
		if p != m.Path.Value {
			return false
		}
	case routes.PathRegularExpression:
		if rt.path == nil || !rt.path.MatchString(p) {
			return false
		}
	default:
		if !prefixMatches(rt.prefix, p) {
			return false
		}
	}
	if m.Method != "" && r.Method != m.Method {
		return false
	}
	for i, h := range m.Headers {
		vals, ok := r.Header[http.CanonicalHeaderKey(h.Name)]
		if strings.EqualFold(h.Name, "host") {
			vals, ok = []string{r.Host}, true
		}
		if !ok || !valueMatches(rt.headers[i], h.Value, strings.Join(vals, ",")) {
			return false
		}
	}
	if len(m.QueryParams) > 0 {
		q := r.URL.Query()
		for i, qm := range m.QueryParams {
			vals, ok := q[qm.Name]
			if !ok || !valueMatches(rt.query[i], qm.Value, vals[0]) {
				return false
			}
		}
	}
	return true
}

func valueMatches(re *regexp.Regexp, want, got string) bool {
	if re != nil {
		return re.MatchString(got)
	}
	return got == want
}

// prefixMatches is element-wise: "/foo" matches "/foo", "/foo/" and "/foo/bar", not "/foobar".
func prefixMatches(prefix, path string) bool {
	if prefix == "/" {
		return true
	}
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// rewritePath applies a path modifier to path, the route having matched prefix.
func rewritePath(m *routes.PathModifier, prefix, path string) string {
	switch m.Type {
	case routes.ReplaceFullPath:
		return m.ReplaceFullPath
	case routes.ReplacePrefixMatch:
		rest := path
		if prefix != "/" {
			rest = strings.TrimPrefix(path, prefix)
		}
		repl := m.ReplacePrefixMatch
		if strings.HasSuffix(repl, "/") && strings.HasPrefix(rest, "/") {
			rest = rest[1:]
		}
		out := repl + rest
		if !strings.HasPrefix(out, "/") {
			out = "/" + out
		}
		return out
	}
	return path
}

// redirect builds a redirect's status and Location as Gateway API defines them: unset parts keep
// the request's; the port is the redirect's, else the scheme's well-known one when the scheme
// changes, else the listener's; a well-known port is left out of the Location.
func redirect(rd *routes.Redirect, rt *route, port int32, r *http.Request, scheme string) (int, string) {
	u := url.URL{Scheme: scheme, RawQuery: r.URL.RawQuery}
	if rd.Scheme != nil {
		u.Scheme = *rd.Scheme
	}
	host := routes.NormalizeHost(r.Host)
	if rd.Hostname != nil {
		host = *rd.Hostname
	}
	p := int(port)
	switch {
	case rd.Port != nil:
		p = int(*rd.Port)
	case rd.Scheme != nil:
		p = wellKnownPort(u.Scheme)
	}
	u.Host = host
	if p != 0 && p != wellKnownPort(u.Scheme) {
		u.Host = host + ":" + strconv.Itoa(p)
	}
	u.Path = r.URL.Path
	if rd.Path != nil {
		u.Path = rewritePath(rd.Path, rt.prefix, r.URL.Path)
	}
	code := rd.StatusCode
	if code == 0 {
		code = http.StatusFound
	}
	return code, u.String()
}

func wellKnownPort(scheme string) int {
	if scheme == "https" {
		return 443
	}
	return 80
}
