package main

import (
	"io"
	"slices"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--conns", "1, 64,512"}, io.Discard)
	if err != nil || !slices.Equal(o.conns, []int{1, 64, 512}) {
		t.Fatalf("--conns 1, 64,512: %v, %v", o.conns, err)
	}
	for _, bad := range []string{"0", "a", "1,,2"} {
		if _, err := parseFlags([]string{"--conns", bad}, io.Discard); err == nil {
			t.Errorf("--conns %q was taken", bad)
		}
	}
}

// The nginx configuration proxies to every pod with kept-alive HTTP/1.1 upstream connections, on
// both addresses, and keeps its temporary files under its prefix.
func TestNginxConfig(t *testing.T) {
	conf := nginxConfig([]string{"10.1.0.5", "10.1.0.6"}, "127.0.0.1:1000", "127.0.0.1:1001", "/w/tls.crt", "/w/tls.key")
	for _, want := range []string{
		"server 10.1.0.5:8080;", "server 10.1.0.6:8080;", "keepalive 320;",
		"listen 127.0.0.1:1000 reuseport;", "listen 127.0.0.1:1001 ssl http2 reuseport;",
		"proxy_http_version 1.1;", `proxy_set_header Connection "";`, "client_body_temp_path tmp/body;",
		"ssl_certificate /w/tls.crt;", "worker_processes 2;",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("nginx.conf lacks %q:\n%s", want, conf)
		}
	}
}
