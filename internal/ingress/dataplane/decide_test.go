package dataplane

import (
	"net/http"
	"net/http/httptest"
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
	l := tbl.listeners[80]
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
	current := map[int32]routes.Protocol{80: routes.ProtocolHTTP, 443: routes.ProtocolHTTP, 8080: routes.ProtocolHTTP}
	open, shut := planListeners(current, &routes.Table{Listeners: []routes.Listener{
		{Port: 80, Protocol: routes.ProtocolHTTP}, {Port: 443, Protocol: routes.ProtocolHTTPS}, {Port: 9090, Protocol: routes.ProtocolHTTP}}})
	var opened []int32
	for _, l := range open {
		opened = append(opened, l.Port)
	}
	if len(opened) != 2 || opened[0] != 443 || opened[1] != 9090 {
		t.Errorf("open = %v, want [443 9090]", opened)
	}
	shutSet := map[int32]bool{}
	for _, p := range shut {
		shutSet[p] = true
	}
	if len(shut) != 2 || !shutSet[443] || !shutSet[8080] {
		t.Errorf("shut = %v, want 443 (protocol changed) and 8080 (gone)", shut)
	}
}
