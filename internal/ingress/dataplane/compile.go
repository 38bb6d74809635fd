package dataplane

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/skiff-sh/skiff/internal/ingress/routes"
)

// table is a routes.Table made ready to serve: listeners by address and port, regular
// expressions compiled. It is never changed after compile returns, except the round-robin
// counters.
type table struct {
	listeners map[routes.ListenerKey]*listener
	// addressed are the ports with a listener of an address of its own: only there does a
	// request's local address matter (the others skip reading it).
	addressed map[int32]bool
}

// lookup is the listener serving a connection that reached the node's address local (an IP,
// "" when unknown) on port: the listener of that address when the table has one (a Gateway's
// own address), else the data plane's own listener of the port.
func (t *table) lookup(local string, port int32) *listener {
	if !t.addressed[port] {
		return t.listeners[routes.ListenerKey{Port: port}]
	}
	if local != "" {
		if l := t.listeners[routes.ListenerKey{Address: local, Port: port}]; l != nil {
			return l
		}
	}
	return t.listeners[routes.ListenerKey{Port: port}]
}

type listener struct {
	spec  *routes.Listener
	hosts [][]route // by index of spec.Hosts
}

type route struct {
	spec *routes.Route
	// prefix is the normalized PathPrefix value ("/foo" for "/foo/"), "/" for any path.
	prefix   string
	path     *regexp.Regexp
	headers  []*regexp.Regexp // nil entries for Exact matches
	query    []*regexp.Regexp
	backends []backend
	weight   int64
	// invalid says why the route cannot serve (a regular expression that does not compile): it
	// matches no request, since what it was meant to match is unknown; Set reports it.
	invalid string
}

type backend struct {
	spec *routes.Backend
	next *atomic.Uint64 // round robin over spec.Endpoints
}

// compile prepares t; the errors name the routes that cannot serve.
func compile(t *routes.Table) (*table, []error) {
	out := &table{listeners: map[routes.ListenerKey]*listener{}, addressed: map[int32]bool{}}
	var errs []error
	for i := range t.Listeners {
		ls := &t.Listeners[i]
		l := &listener{spec: ls, hosts: make([][]route, len(ls.Hosts))}
		for h := range ls.Hosts {
			rs := ls.Hosts[h].Routes
			l.hosts[h] = make([]route, len(rs))
			for r := range rs {
				l.hosts[h][r] = compileRoute(&rs[r])
				if inv := l.hosts[h][r].invalid; inv != "" {
					src := rs[r].Source
					errs = append(errs, fmt.Errorf("%s host %q: %s %s/%s rule %d match %d: %s", keyString(ls.Key()), ls.Hosts[h].Hostname, src.Kind, src.Namespace, src.Name, src.Rule, src.Match, inv))
				}
			}
		}
		out.listeners[ls.Key()] = l
		if ls.Address != "" {
			out.addressed[ls.Port] = true
		}
	}
	return out, errs
}

func compileRoute(rs *routes.Route) route {
	r := route{spec: rs, prefix: "/"}
	var errs []string
	m := &rs.Match
	switch m.Path.Type {
	case routes.PathPrefix:
		r.prefix = normalizePrefix(m.Path.Value)
	case routes.PathRegularExpression:
		re, err := regexp.Compile("^(?:" + m.Path.Value + ")$")
		if err != nil {
			errs = append(errs, fmt.Sprintf("path: %v", err))
		}
		r.path = re
	}
	for _, h := range m.Headers {
		r.headers = append(r.headers, compileValue(h.Type, h.Value, "header "+h.Name, &errs))
	}
	for _, q := range m.QueryParams {
		r.query = append(r.query, compileValue(q.Type, q.Value, "query "+q.Name, &errs))
	}
	for i := range rs.Backends {
		b := &rs.Backends[i]
		r.backends = append(r.backends, backend{spec: b, next: new(atomic.Uint64)})
		if b.Weight > 0 {
			r.weight += int64(b.Weight)
		}
	}
	r.invalid = strings.Join(errs, "; ")
	return r
}

func compileValue(t routes.ValueMatchType, v, what string, errs *[]string) *regexp.Regexp {
	if t != routes.ValueRegularExpression {
		return nil
	}
	re, err := regexp.Compile("^(?:" + v + ")$")
	if err != nil {
		*errs = append(*errs, fmt.Sprintf("%s: %v", what, err))
	}
	return re
}

// normalizePrefix drops a prefix's trailing slash: Gateway API and Ingress both match "/foo/"
// as "/foo" (element-wise).
func normalizePrefix(p string) string {
	p = strings.TrimRight(p, "/")
	if p == "" {
		return "/"
	}
	return p
}

// keyString names a listener's address and port in errors and logs ("port 80", "10.0.0.9:80").
func keyString(k routes.ListenerKey) string {
	if k.Address == "" {
		return fmt.Sprintf("port %d", k.Port)
	}
	return net.JoinHostPort(k.Address, strconv.Itoa(int(k.Port)))
}
