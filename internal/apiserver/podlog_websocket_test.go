package apiserver

import (
	"net/http"
	"testing"
)

func TestLogWebSocketNegotiation(t *testing.T) {
	protocols := []struct {
		offered []string
		want    string
		ok      bool
	}{
		{nil, "", true},
		{[]string{"binary.k8s.io"}, "binary.k8s.io", true},
		{[]string{"base64.binary.k8s.io"}, "base64.binary.k8s.io", true},
		{[]string{"base64.binary.k8s.io", "binary.k8s.io"}, "binary.k8s.io", true},
		{[]string{"v5.channel.k8s.io"}, "", false},
	}
	for _, tc := range protocols {
		if got, ok := logProtocol(tc.offered); got != tc.want || ok != tc.ok {
			t.Errorf("logProtocol(%v) = %q, %v; want %q, %v", tc.offered, got, ok, tc.want, tc.ok)
		}
	}
	upgrades := []struct {
		connection, upgrade string
		want                bool
	}{
		{"Upgrade", "websocket", true},
		{"keep-alive, Upgrade", "WebSocket", true},
		{"Upgrade", "SPDY/3.1", false},
		{"", "websocket", false},
		{"keep-alive", "", false},
	}
	for _, tc := range upgrades {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Connection", tc.connection)
		r.Header.Set("Upgrade", tc.upgrade)
		if got := isWebSocketRequest(r); got != tc.want {
			t.Errorf("Connection %q Upgrade %q: websocket = %v", tc.connection, tc.upgrade, got)
		}
	}
}
