package routes

import (
	"testing"
	"time"
)

func TestPrecedes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src := func(ns, name string, created time.Time, rule, match int) Source {
		return Source{Kind: SourceHTTPRoute, Namespace: ns, Name: name, Created: created, Rule: rule, Match: match}
	}
	base := src("default", "a", t0, 0, 0)
	path := func(typ PathMatchType, v string) Match { return Match{Path: PathMatch{Type: typ, Value: v}} }
	hdr := func(n int) []HeaderMatch { return make([]HeaderMatch, n) }
	qp := func(n int) []QueryParamMatch { return make([]QueryParamMatch, n) }
	cases := []struct {
		name string
		a, b Route
		want bool // a before b
	}{
		{"exact over prefix", Route{Source: base, Match: path(PathExact, "/a")}, Route{Source: base, Match: path(PathPrefix, "/abcdef")}, true},
		{"prefix after exact", Route{Source: base, Match: path(PathPrefix, "/abcdef")}, Route{Source: base, Match: path(PathExact, "/a")}, false},
		{"regex between exact and prefix", Route{Source: base, Match: path(PathRegularExpression, "/.*")}, Route{Source: base, Match: path(PathPrefix, "/abc")}, true},
		{"exact over regex", Route{Source: base, Match: path(PathExact, "/")}, Route{Source: base, Match: path(PathRegularExpression, "/a.*")}, true},
		{"longest prefix", Route{Source: base, Match: path(PathPrefix, "/foo/bar")}, Route{Source: base, Match: path(PathPrefix, "/foo")}, true},
		{"zero path is prefix /", Route{Source: base, Match: path(PathPrefix, "/x")}, Route{Source: base}, true},
		{"method wins at equal path", Route{Source: base, Match: Match{Path: PathMatch{PathPrefix, "/"}, Method: "GET"}}, Route{Source: base, Match: Match{Path: PathMatch{PathPrefix, "/"}, Headers: hdr(3)}}, true},
		{"more headers", Route{Source: base, Match: Match{Headers: hdr(2)}}, Route{Source: base, Match: Match{Headers: hdr(1), QueryParams: qp(5)}}, true},
		{"more query params", Route{Source: base, Match: Match{QueryParams: qp(2)}}, Route{Source: base, Match: Match{QueryParams: qp(1)}}, true},
		{"path beats headers", Route{Source: base, Match: Match{Path: PathMatch{PathPrefix, "/ab"}}}, Route{Source: base, Match: Match{Path: PathMatch{PathPrefix, "/a"}, Headers: hdr(4)}}, true},
		{"older object", Route{Source: src("z", "z", t0, 3, 3)}, Route{Source: src("a", "a", t0.Add(time.Second), 0, 0)}, true},
		{"alphabetical namespace/name", Route{Source: src("a", "z", t0, 1, 0)}, Route{Source: src("b", "a", t0, 0, 0)}, true},
		{"namespace/name not name alone", Route{Source: src("b", "a", t0, 0, 0)}, Route{Source: src("a", "z", t0, 0, 0)}, false},
		{"earlier rule", Route{Source: src("a", "a", t0, 0, 5)}, Route{Source: src("a", "a", t0, 1, 0)}, true},
		{"earlier match", Route{Source: src("a", "a", t0, 1, 0)}, Route{Source: src("a", "a", t0, 1, 1)}, true},
		{"identical is not before", Route{Source: base}, Route{Source: base}, false},
		{"default backend last", Route{Source: Source{Default: true}, Match: path(PathExact, "/")}, Route{Source: src("z", "z", t0.Add(time.Hour), 9, 9)}, false},
		{"rule before default backend", Route{Source: src("z", "z", t0.Add(time.Hour), 9, 9)}, Route{Source: Source{Default: true, Created: t0}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Precedes(&c.a, &c.b); got != c.want {
				t.Errorf("Precedes = %v, want %v", got, c.want)
			}
		})
	}
}

func TestSortRoutes(t *testing.T) {
	rs := []Route{
		{Source: Source{Name: "prefix-short"}, Match: Match{Path: PathMatch{PathPrefix, "/"}}},
		{Source: Source{Name: "default", Default: true}},
		{Source: Source{Name: "prefix-long"}, Match: Match{Path: PathMatch{PathPrefix, "/foo"}}},
		{Source: Source{Name: "exact"}, Match: Match{Path: PathMatch{PathExact, "/foo"}}},
		{Source: Source{Name: "prefix-short-header"}, Match: Match{Path: PathMatch{PathPrefix, "/"}, Headers: []HeaderMatch{{Name: "x"}}}},
	}
	SortRoutes(rs)
	want := []string{"exact", "prefix-long", "prefix-short-header", "prefix-short", "default"}
	for i, w := range want {
		if rs[i].Source.Name != w {
			t.Fatalf("order %d = %q, want %q (all: %v)", i, rs[i].Source.Name, w, rs)
		}
	}
}

func TestSelectHost(t *testing.T) {
	hosts := []VirtualHost{
		{Hostname: ""},
		{Hostname: "*.example.com"},
		{Hostname: "*.a.example.com"},
		{Hostname: "foo.a.example.com"},
		{Hostname: "*.single.com", SingleLabelWildcard: true},
		{Hostname: "Upper.Example.com"},
	}
	cases := []struct {
		host string
		want int
	}{
		{"foo.a.example.com", 3},
		{"bar.a.example.com", 2},
		{"x.y.a.example.com", 2},
		{"b.example.com", 1},
		{"x.y.example.com", 1}, // Gateway wildcards span labels
		{"example.com", 0},     // a wildcard never matches its bare suffix
		{"other.org", 0},
		{"one.single.com", 4},
		{"two.one.single.com", 0}, // Ingress wildcards cover one label only
		{"upper.example.com", 5},
	}
	for _, c := range cases {
		if got := SelectHost(hosts, c.host); got != c.want {
			t.Errorf("SelectHost(%q) = %d, want %d", c.host, got, c.want)
		}
	}
	if got := SelectHost(hosts[1:2], "other.org"); got != -1 {
		t.Errorf("no catch-all: SelectHost = %d, want -1", got)
	}
}

func TestNormalizeHost(t *testing.T) {
	for in, want := range map[string]string{
		"Foo.Example.com:8080": "foo.example.com",
		"foo.example.com.":     "foo.example.com",
		"[::1]:80":             "::1",
		"[::1]":                "::1",
		"127.0.0.1":            "127.0.0.1",
	} {
		if got := NormalizeHost(in); got != want {
			t.Errorf("NormalizeHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSelectCertificate(t *testing.T) {
	certs := []Certificate{
		{Source: "wild", Hostnames: []string{"*.example.com"}},
		{Source: "default"},
		{Source: "exact", Hostnames: []string{"b.org", "a.example.com"}},
	}
	cases := map[string]string{
		"a.example.com": "exact",
		"b.org":         "exact",
		"c.example.com": "wild",
		"":              "default",
		"other.net":     "default",
	}
	for sni, want := range cases {
		if got := SelectCertificate(certs, sni); got == nil || got.Source != want {
			t.Errorf("SelectCertificate(%q) = %v, want %s", sni, got, want)
		}
	}
	if got := SelectCertificate(certs[:1], "other.net"); got == nil || got.Source != "wild" {
		t.Errorf("no default: want the first certificate, got %v", got)
	}
	if got := SelectCertificate(nil, "x"); got != nil {
		t.Errorf("no certificates: got %v", got)
	}
}

func TestMerge(t *testing.T) {
	a := Table{Listeners: []Listener{{Name: "ingress-https", Port: 443, Protocol: ProtocolHTTPS,
		Certificates: []Certificate{{Source: "a"}},
		Hosts:        []VirtualHost{{Hostname: "x.com", Routes: []Route{{Source: Source{Name: "a"}, Match: Match{Path: PathMatch{PathPrefix, "/"}}}}}}}}}
	b := Table{Listeners: []Listener{
		{Name: "gw", Port: 443, Protocol: ProtocolHTTPS, Certificates: []Certificate{{Source: "b"}},
			Hosts: []VirtualHost{{Hostname: "x.com", Routes: []Route{{Source: Source{Name: "b"}, Match: Match{Path: PathMatch{PathExact, "/"}}}}}, {Hostname: "y.com"}}},
		{Name: "gw-http", Port: 80, Protocol: ProtocolHTTP},
	}}
	m := Merge(a, b)
	if len(m.Listeners) != 2 || m.Listeners[0].Port != 80 || m.Listeners[1].Port != 443 {
		t.Fatalf("listeners: %+v", m.Listeners)
	}
	l := m.Listeners[1]
	if l.Name != "ingress-https" || len(l.Certificates) != 2 || len(l.Hosts) != 2 {
		t.Fatalf("merged 443: %+v", l)
	}
	if r := l.Hosts[0].Routes; len(r) != 2 || r[0].Source.Name != "b" {
		t.Fatalf("x.com routes not merged in precedence order: %+v", r)
	}
	if len(a.Listeners[0].Hosts[0].Routes) != 1 {
		t.Fatalf("Merge changed its input")
	}
}
