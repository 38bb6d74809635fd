package podstream

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
)

// TestPortForwardTunnel: client-go's SPDY-over-WebSocket dialer (kubectl port-forward's default
// since v1.31) reaches a runtime that speaks only SPDY: the protocol the runtime chose comes back
// as the WebSocket subprotocol, and a forwarded stream's bytes cross both ways.
func TestPortForwardTunnel(t *testing.T) {
	f := newFakeRuntime(t)
	base := f.translator().URL
	u, err := url.Parse(base + "/portforward?ports=8080")
	if err != nil {
		t.Fatal(err)
	}
	dialer, err := portforward.NewSPDYOverWebsocketDialer(u, &rest.Config{Host: base})
	if err != nil {
		t.Fatal(err)
	}
	conn, protocol, err := dialer.Dial(portforward.PortForwardProtocolV1Name)
	if err != nil {
		t.Fatalf("dial tunnel: %v", err)
	}
	defer conn.Close()
	if protocol != portforward.PortForwardProtocolV1Name {
		t.Errorf("negotiated %q", protocol)
	}
	headers := http.Header{}
	headers.Set(corev1.PortHeader, "8080")
	headers.Set(corev1.PortForwardRequestIDHeader, "0")
	headers.Set(corev1.StreamType, corev1.StreamTypeError)
	errStream, err := conn.CreateStream(headers)
	if err != nil {
		t.Fatal(err)
	}
	headers.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := conn.CreateStream(headers)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(data, "hello"); err != nil {
		t.Fatal(err)
	}
	_ = data.Close() // half-close: the runtime answers at the end of what it reads
	got, err := io.ReadAll(data)
	if err != nil || string(got) != "port 8080: hello" {
		t.Errorf("forwarded stream = %q, %v", got, err)
	}
	if msg, _ := io.ReadAll(errStream); len(msg) != 0 {
		t.Errorf("error stream = %q", msg)
	}
}

// TestPortForwardTunnelRefused: an upstream that refuses the SPDY upgrade is answered with its
// status and message before any WebSocket upgrade, and a WebSocket that offers no tunneling
// protocol gets a 400 Status.
func TestPortForwardTunnelRefused(t *testing.T) {
	f := newFakeRuntime(t)
	base := f.translator().URL
	u, err := url.Parse(base + "/refused")
	if err != nil {
		t.Fatal(err)
	}
	dialer, err := portforward.NewSPDYOverWebsocketDialer(u, &rest.Config{Host: base})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := dialer.Dial(portforward.PortForwardProtocolV1Name); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("refused upstream: %v, want the upstream's 404", err)
	}

	req, err := http.NewRequest(http.MethodGet, base+"/portforward", nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
		"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Protocol": "v4.channel.k8s.io"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "SPDY/3.1+portforward.k8s.io") {
		t.Errorf("no tunneling protocol = %d %s", resp.StatusCode, body)
	}
}
