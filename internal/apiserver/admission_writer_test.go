package apiserver

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestWarningWriterPassesHijackAndFlush: the writer that adds admission warnings must not hide the
// connection beneath it, or exec, attach and port-forward upgrades through the proxy fail.
func TestWarningWriterPassesHijackAndFlush(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ww, _ := withAdmissionWarnings(w, r)
		rc := http.NewResponseController(ww)
		if r.URL.Path == "/flush" {
			if err := rc.Flush(); err != nil {
				t.Errorf("flush through the warning writer: %v", err)
			}
			return
		}
		conn, brw, err := rc.Hijack()
		if err != nil {
			t.Errorf("hijack through the warning writer: %v", err)
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
		_ = brw.Flush()
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/flush")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if line != "HTTP/1.1 101 Switching Protocols\r\n" {
		t.Fatalf("status line %q", line)
	}
}
