package apiserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLongRunning(t *testing.T) {
	for _, tc := range []struct {
		info RequestInfo
		want bool
	}{
		{RequestInfo{IsResourceRequest: true, Verb: "watch", Resource: "pods"}, true},
		{RequestInfo{IsResourceRequest: true, Verb: "list", Resource: "pods"}, false},
		{RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "pods", Subresource: "log"}, true},
		{RequestInfo{IsResourceRequest: true, Verb: "create", Resource: "pods", Subresource: "exec"}, true},
		{RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "pods", Subresource: "portforward"}, true},
		{RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "services", Subresource: "proxy"}, true},
		{RequestInfo{IsResourceRequest: true, Verb: "update", Resource: "pods", Subresource: "status"}, false},
		{RequestInfo{Verb: "get", Path: "/healthz"}, false},
	} {
		if got := longRunning(&tc.info); got != tc.want {
			t.Errorf("longRunning(%+v) = %v, want %v", tc.info, got, tc.want)
		}
	}
}

func TestRequestTimeoutParameter(t *testing.T) {
	s := newStorelessServer(t)
	s.cfg.RequestTimeout = 60 * time.Second
	for _, tc := range []struct {
		query   string
		want    time.Duration
		wantErr bool
	}{
		{"", 60 * time.Second, false},
		{"timeout=5s", 5 * time.Second, false},
		{"timeout=5m", 60 * time.Second, false},
		{"timeout=abc", 0, true},
		// 0s is no timeout of the client's own: the server's limit (e2e "default timeout should
		// be used if the specified timeout in the request URL is 0s"); a negative one likewise.
		{"timeout=0s", 60 * time.Second, false},
		{"timeout=-1s", 60 * time.Second, false},
	} {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/pods?"+tc.query, nil)
		got, err := s.requestTimeout(r)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%q: got %v, %v; want %v, error %v", tc.query, got, err, tc.want, tc.wantErr)
		}
		if err != nil && statusOf(t, err).Code != http.StatusBadRequest {
			t.Errorf("%q: error %v is not a 400", tc.query, err)
		}
	}
}

// timeoutServer serves handler under serveWithTimeout(d) on a real listener.
func timeoutServer(t *testing.T, d time.Duration, handler http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := newStorelessServer(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serveWithTimeout(w, r, d, handler)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func decodeStatus(t *testing.T, resp *http.Response) metav1.Status {
	t.Helper()
	defer resp.Body.Close()
	var status metav1.Status
	if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
		t.Fatalf("response is not a Status: %v", err)
	}
	return status
}

func TestSlowHandlerGets504(t *testing.T) {
	srv := timeoutServer(t, 200*time.Millisecond, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		// What a handler does when its storage call fails on the cancelled context: it yields
		// to the timeout's answer.
		w.Header().Set("X-Handler", "late")
		http.Error(w, "internal error: "+r.Context().Err().Error(), http.StatusInternalServerError)
	})
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusGatewayTimeout || resp.Header.Get("X-Handler") != "" {
		t.Fatalf("status %d, headers %v; want 504 without the late handler's headers", resp.StatusCode, resp.Header)
	}
	status := decodeStatus(t, resp)
	if status.Reason != metav1.StatusReasonTimeout || status.Code != http.StatusGatewayTimeout || !strings.Contains(status.Message, "request did not complete within requested timeout") {
		t.Fatalf("status %+v", status)
	}
}

func TestFastHandlerAnswers(t *testing.T) {
	srv := timeoutServer(t, 5*time.Second, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Handler", "yes")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, "made")
	})
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("X-Handler") != "yes" || string(body) != "made" {
		t.Fatalf("got %d %v %q", resp.StatusCode, resp.Header, body)
	}
}

// TestStreamingAnswerIsNotReplaced: an answer under way when the deadline passes is not turned
// into a 504; the handler sees its context end and stops.
func TestStreamingAnswerIsNotReplaced(t *testing.T) {
	srv := timeoutServer(t, 200*time.Millisecond, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		fmt.Fprintln(w, "first")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		fmt.Fprintln(w, "last")
	})
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "first") {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
}

// TestSlowBodyTimesOut: a client that sends its body slowly gets a 504 at the deadline, and the
// server keeps answering others meanwhile.
func TestSlowBodyTimesOut(t *testing.T) {
	srv := timeoutServer(t, 300*time.Millisecond, func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, "ok")
	})
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	// Another client is served while the slow one holds its request open.
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a normal client got %d while a slow one was stalled", resp.StatusCode)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	slow, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the slow client got no answer: %v", err)
	}
	if slow.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("the slow client got %d, want 504", slow.StatusCode)
	}
	if status := decodeStatus(t, slow); status.Reason != metav1.StatusReasonTimeout {
		t.Fatalf("status %+v", status)
	}
}

func TestHandlerPanicReachesTheServer(t *testing.T) {
	s := newStorelessServer(t)
	defer func() {
		if p := recover(); p != "boom" {
			t.Fatalf("recovered %v, want the handler's panic", p)
		}
	}()
	s.serveWithTimeout(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil), time.Second, func(http.ResponseWriter, *http.Request) {
		panic("boom")
	})
}

// TestTimeoutLeavesTheConnectionUsable: after a 504 the next request on the same kept-alive
// connection is served as usual, with a context of its own (the deadline once cancelled the
// connection's context, and every later request on it was a 504 at once).
func TestTimeoutLeavesTheConnectionUsable(t *testing.T) {
	for _, tc := range []struct {
		name, first string
	}{
		{"without a body", "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"with a whole body", "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := timeoutServer(t, 200*time.Millisecond, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if r.URL.Path == "/slow" {
					<-r.Context().Done()
					return
				}
				if err := r.Context().Err(); err != nil {
					http.Error(w, "context ended before the request began: "+err.Error(), http.StatusInternalServerError)
					return
				}
				fmt.Fprint(w, "ok")
			})
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			br := bufio.NewReader(conn)
			for i, req := range []string{tc.first, "GET /next HTTP/1.1\r\nHost: x\r\n\r\n"} {
				if _, err := io.WriteString(conn, req); err != nil {
					t.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := []int{http.StatusGatewayTimeout, http.StatusOK}[i]
				if resp.StatusCode != want {
					t.Fatalf("request %d on the connection: %d %s, want %d", i, resp.StatusCode, body, want)
				}
			}
		})
	}
}
