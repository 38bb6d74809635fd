package apiserver

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestProxyRewriteURL(t *testing.T) {
	p := proxyRewrite{prefix: "/api/v1/namespaces/ns/pods/web:80/proxy", backendHost: "10.42.0.5:80", requestHost: "127.0.0.1:6443"}
	for _, tc := range []struct{ in, want string }{
		{"/rewriteme", p.prefix + "/rewriteme"},
		{"/dir/", p.prefix + "/dir/"},
		{"/", p.prefix + "/"},
		{"/a?b=c#frag", p.prefix + "/a?b=c#frag"},
		{"relative/path", "relative/path"},
		{"../up", "../up"},
		{"http://10.42.0.5:80/x", p.prefix + "/x"},
		{"https://127.0.0.1:6443/y", p.prefix + "/y"},
		{"http://example.com/z", "http://example.com/z"},
		{"mailto:someone@example.com", "mailto:someone@example.com"},
		{p.prefix + "/already", p.prefix + "/already"},
		{"%zz", "%zz"},
	} {
		if got := p.rewriteURL(tc.in); got != tc.want {
			t.Errorf("rewriteURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestProxyRewriteHTML(t *testing.T) {
	p := proxyRewrite{prefix: "/p", backendHost: "b:1"}
	in := `<!DOCTYPE html><html><head><link rel="stylesheet" href="/s.css"><script src="/j.js"></script></head>` +
		`<body><a href="/x" title="/not-a-link">a &amp; b</a><img src="i.png"/><form action="/f"></form>` +
		`<div data-href="/kept"></div><!-- <a href="/comment"> --></body></html>`
	want := `<!DOCTYPE html><html><head><link rel="stylesheet" href="/p/s.css"><script src="/p/j.js"></script></head>` +
		`<body><a href="/p/x" title="/not-a-link">a &amp; b</a><img src="i.png"/><form action="/p/f"></form>` +
		`<div data-href="/kept"></div><!-- <a href="/comment"> --></body></html>`
	var out bytes.Buffer
	if err := p.rewriteHTML(&out, strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	if out.String() != want {
		t.Errorf("rewriteHTML:\n got %s\nwant %s", out.String(), want)
	}
}

// TestProxyRewriteResponse: a gzipped HTML answer is decompressed and rewritten, CORS headers are
// dropped, and other content types pass untouched.
func TestProxyRewriteResponse(t *testing.T) {
	p := proxyRewrite{prefix: "/p", backendHost: "b:1"}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	io.WriteString(zw, `<a href="/x">x</a>`)
	zw.Close()
	resp := &http.Response{Header: http.Header{
		"Content-Type": {"text/html"}, "Content-Encoding": {"gzip"}, "Content-Length": {"99"},
		"Access-Control-Allow-Origin": {"*"},
	}, Body: io.NopCloser(&gz), ContentLength: 99}
	if err := p.modifyResponse(resp); err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if string(body) != `<a href="/p/x">x</a>` || resp.Header.Get("Content-Encoding") != "" || resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.ContentLength != -1 {
		t.Errorf("rewritten: %q headers %v length %d", body, resp.Header, resp.ContentLength)
	}

	plain := &http.Response{Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(`{"href":"/x"}`))}
	if err := p.modifyResponse(plain); err != nil {
		t.Fatal(err)
	}
	if body, _ := io.ReadAll(plain.Body); string(body) != `{"href":"/x"}` {
		t.Errorf("JSON changed: %s", body)
	}
}
