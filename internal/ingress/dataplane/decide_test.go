package dataplane

import (
	"cmp"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/ingress/routes"
)

func be(name string, weight int32, eps ...string) routes.Backend {
	b := routes.Backend{Name: name, Weight: weight}
	for _, e := range eps {
		b.Endpoints = append(b.Endpoints, routes.Endpoint{Address: e})
	}
	return b
}

func rt(name string, m routes.Match, bs ...routes.Backend) routes.Route {
	return routes.Route{Source: routes.Source{Kind: routes.SourceHTTPRoute, Namespace: "ns", Name: name}, Match: m, Backends: bs}
}

func prefix(p string) routes.Match {
	return routes.Match{Path: routes.PathMatch{Type: routes.PathPrefix, Value: p}}
}
func exact(p string) routes.Match {
	return routes.Match{Path: routes.PathMatch{Type: routes.PathExact, Value: p}}
}

func TestDecide(t *testing.T) {
	web := be("web", 1, "10.0.0.1:80")
	hosts := []routes.VirtualHost{
		{Hostname: "a.example.com", Routes: []routes.Route{
			rt("exact", exact("/x"), be("exact", 1, "10.0.1.1:80")),
			rt("api", prefix("/api/"), be("api", 1, "10.0.2.1:80")),
			rt("regex", routes.Match{Path: routes.PathMatch{Type: routes.PathRegularExpression, Value: "/re/[0-9]+"}}, be("regex", 1, "10.0.3.1:80")),
			rt("hdr", routes.Match{Path: routes.PathMatch{Type: routes.PathPrefix, Value: "/h"}, Headers: []routes.HeaderMatch{{Type: routes.ValueExact, Name: "X-Env", Value: "canary"}}}, be("hdr", 1, "10.0.4.1:80")),
			rt("query", routes.Match{Path: routes.PathMatch{Type: routes.PathPrefix, Value: "/h"}, QueryParams: []routes.QueryParamMatch{{Type: routes.ValueRegularExpression, Name: "v", Value: "[0-9]"}}}, be("query", 1, "10.0.5.1:80")),
			rt("post", routes.Match{Path: routes.PathMatch{Type: routes.PathPrefix, Value: "/h"}, Method: "POST"}, be("post", 1, "10.0.6.1:80")),
			rt("empty", prefix("/empty"), be("empty", 1)),
			rt("invalid", prefix("/invalid"), routes.Backend{Name: "invalid", Weight: 1, Invalid: "service ns/x not found"}),
			rt("nobackend", prefix("/nobackend")),
			rt("badre", routes.Match{Path: routes.PathMatch{Type: routes.PathRegularExpression, Value: "/bad/("}}, web),
			{Source: routes.Source{Name: "redirect"}, Match: prefix("/old"), Filters: []routes.Filter{{Type: routes.FilterRequestRedirect,
				RequestRedirect: &routes.Redirect{Scheme: ptr.To("https"), Path: &routes.PathModifier{Type: routes.ReplacePrefixMatch, ReplacePrefixMatch: "/new"}, StatusCode: 301}}}},
			rt("split", prefix("/split"), be("zero", 0, "10.0.9.9:80"), be("one", 1, "10.0.7.1:80"), be("three", 3, "10.0.8.1:80")),
			rt("root", prefix("/"), web),
		}},
		{Hostname: "*.example.com", Routes: []routes.Route{rt("wild", prefix("/"), be("wild", 1, "10.0.10.1:80"))}},
	}
	for i := range hosts {
		routes.SortRoutes(hosts[i].Routes)
	}
	tbl, errs := compile(&routes.Table{Listeners: []routes.Listener{{Port: 80, Protocol: routes.ProtocolHTTP, Hosts: hosts}}})
	if len(errs) != 1 {
		t.Fatalf("compile errors = %v, want the bad regular expression's", errs)
	}
	l := tbl.listeners[routes.ListenerKey{Port: 80}]
	cases := []struct {
		name, method, url string
		header            http.Header
		pick              int64
		backend           string
		status            int
		location          string
	}{
		{name: "exact", url: "http://a.example.com/x", backend: "exact"},
		{name: "exact is not prefix", url: "http://a.example.com/x/y", backend: "web"},
		{name: "prefix with trailing slash matches bare", url: "http://a.example.com/api", backend: "api"},
		{name: "prefix element-wise", url: "http://a.example.com/apix", backend: "web"},
		{name: "prefix deeper", url: "http://a.example.com/api/v1/x", backend: "api"},
		{name: "regex", url: "http://a.example.com/re/42", backend: "regex"},
		{name: "regex whole path", url: "http://a.example.com/re/42/x", backend: "web"},
		{name: "method", method: "POST", url: "http://a.example.com/h?v=1", header: http.Header{"X-Env": {"canary"}}, backend: "post"},
		{name: "header before query", url: "http://a.example.com/h?v=1", header: http.Header{"X-Env": {"canary"}}, backend: "hdr"},
		{name: "query", url: "http://a.example.com/h?v=1", backend: "query"},
		{name: "query regex misses", url: "http://a.example.com/h?v=a", backend: "web"},
		{name: "host with port and case", url: "http://A.Example.com:8080/", backend: "web"},
		{name: "wildcard host", url: "http://b.example.com/x", backend: "wild"},
		{name: "unknown host", url: "http://other.org/", status: 404},
		{name: "no endpoints", url: "http://a.example.com/empty", status: 503},
		{name: "invalid backend", url: "http://a.example.com/invalid", status: 500},
		{name: "no backends", url: "http://a.example.com/nobackend", status: 500},
		{name: "bad regex matches nothing", url: "http://a.example.com/bad/(", backend: "web"},
		{name: "redirect", url: "http://a.example.com/old/page?q=1", status: 301, location: "https://a.example.com/new/page?q=1"},
		{name: "weight 0 never picked", url: "http://a.example.com/split", pick: 0, backend: "one"},
		{name: "weights", url: "http://a.example.com/split", pick: 1, backend: "three"},
		{name: "weights top", url: "http://a.example.com/split", pick: 3, backend: "three"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			method := c.method
			if method == "" {
				method = "GET"
			}
			r := httptest.NewRequest(method, c.url, nil)
			for k, v := range c.header {
				r.Header[k] = v
			}
			d := decide(l, r, "http", func(n int64) int64 {
				if c.pick >= n {
					t.Fatalf("pick %d out of [0,%d)", c.pick, n)
				}
				return c.pick
			})
			if d.status != c.status {
				t.Fatalf("status = %d (%s), want %d", d.status, d.reason, c.status)
			}
			if c.status == 0 && (d.backend == nil || d.backend.spec.Name != c.backend) {
				t.Fatalf("backend = %v, want %s", backendName(d.backend), c.backend)
			}
			if d.location != c.location {
				t.Fatalf("location = %q, want %q", d.location, c.location)
			}
		})
	}
}

func TestRewritePath(t *testing.T) {
	cases := []struct {
		m            routes.PathModifier
		prefix, path string
		want         string
	}{
		{routes.PathModifier{Type: routes.ReplaceFullPath, ReplaceFullPath: "/full"}, "/a", "/a/b", "/full"},
		{routes.PathModifier{Type: routes.ReplacePrefixMatch, ReplacePrefixMatch: "/b"}, "/a", "/a/c", "/b/c"},
		{routes.PathModifier{Type: routes.ReplacePrefixMatch, ReplacePrefixMatch: "/"}, "/a", "/a/c", "/c"},
		{routes.PathModifier{Type: routes.ReplacePrefixMatch, ReplacePrefixMatch: "/"}, "/a", "/a", "/"},
		{routes.PathModifier{Type: routes.ReplacePrefixMatch, ReplacePrefixMatch: "/b/"}, "/a", "/a/c", "/b/c"},
		{routes.PathModifier{Type: routes.ReplacePrefixMatch, ReplacePrefixMatch: "/b"}, "/", "/c", "/b/c"},
	}
	for _, c := range cases {
		if got := rewritePath(&c.m, c.prefix, c.path); got != c.want {
			t.Errorf("rewritePath(%+v, %q, %q) = %q, want %q", c.m, c.prefix, c.path, got, c.want)
		}
	}
}

func TestPlanListeners(t *testing.T) {
	key := func(addr string, port int32) routes.ListenerKey { return routes.ListenerKey{Address: addr, Port: port} }
	plain, secure := routes.ProtocolHTTP, routes.ProtocolHTTPS
	cases := []struct {
		name      string
		current   map[routes.ListenerKey]routes.Protocol
		table     []routes.Listener
		wildcard  bool
		open      []openSocket
		shut      []routes.ListenerKey
		conflicts int
	}{{
		name:    "new, changed and dropped ports",
		current: map[routes.ListenerKey]routes.Protocol{key("", 80): plain, key("", 443): plain, key("", 8080): plain},
		table:   []routes.Listener{{Port: 80, Protocol: plain}, {Port: 443, Protocol: secure}, {Port: 9090, Protocol: plain}},
		open:    []openSocket{{key("", 443), secure}, {key("", 9090), plain}},
		shut:    []routes.ListenerKey{key("", 443), key("", 8080)},
	}, {
		name:  "a Gateway's own address gets a socket of its own beside the data plane's",
		table: []routes.Listener{{Port: 80, Protocol: plain}, {Address: "10.0.0.9", Port: 80, Protocol: plain}},
		open:  []openSocket{{key("", 80), plain}, {key("10.0.0.9", 80), plain}},
	}, {
		name:     "binding every address, one socket per port serves every address",
		table:    []routes.Listener{{Address: "10.0.0.8", Port: 80, Protocol: plain}, {Port: 80, Protocol: plain}, {Address: "10.0.0.9", Port: 80, Protocol: plain}},
		wildcard: true,
		open:     []openSocket{{key("", 80), plain}},
	}, {
		name:      "sharing a socket, the data plane's protocol wins over a Gateway's",
		table:     []routes.Listener{{Address: "10.0.0.9", Port: 80, Protocol: secure}, {Port: 80, Protocol: plain}},
		wildcard:  true,
		open:      []openSocket{{key("", 80), plain}},
		conflicts: 1,
	}, {
		name:     "a Gateway's address alone on a port, binding every address",
		current:  map[routes.ListenerKey]routes.Protocol{key("", 80): plain},
		table:    []routes.Listener{{Address: "10.0.0.9", Port: 8443, Protocol: secure}},
		wildcard: true,
		open:     []openSocket{{key("", 8443), secure}},
		shut:     []routes.ListenerKey{key("", 80)},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan := planListeners(c.current, &routes.Table{Listeners: c.table}, c.wildcard)
			if !slices.Equal(plan.open, c.open) {
				t.Errorf("open = %v, want %v", plan.open, c.open)
			}
			less := func(a, b routes.ListenerKey) int {
				return cmp.Or(cmp.Compare(a.Port, b.Port), cmp.Compare(a.Address, b.Address))
			}
			slices.SortFunc(plan.shut, less)
			if !slices.Equal(plan.shut, c.shut) {
				t.Errorf("shut = %v, want %v", plan.shut, c.shut)
			}
			if len(plan.conflicts) != c.conflicts {
				t.Errorf("conflicts = %v, want %d", plan.conflicts, c.conflicts)
			}
		})
	}
}

func TestLookupPrefersTheAddressReached(t *testing.T) {
	own := routes.Listener{Name: "gateway", Address: "10.0.0.9", Port: 80}
	tbl, _ := compile(&routes.Table{Listeners: []routes.Listener{{Name: "node", Port: 80}, own}})
	for _, c := range []struct{ local, want string }{{"10.0.0.9", "gateway"}, {"10.0.0.1", "node"}, {"", "node"}} {
		if l := tbl.lookup(c.local, 80); l == nil || l.spec.Name != c.want {
			t.Errorf("lookup(%q, 80) = %v, want %s", c.local, l, c.want)
		}
	}
	if l := tbl.lookup("10.0.0.9", 443); l != nil {
		t.Errorf("lookup on a port without listeners = %s", l.spec.Name)
	}
}
