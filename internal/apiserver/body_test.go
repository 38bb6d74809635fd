package apiserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/builtin"
	"github.com/skiff-sh/skiff/internal/storage"
)

func TestBodyLeftUnread(t *testing.T) {
	for _, tc := range []struct {
		name          string
		protoMajor    int
		contentLength int64
		read          int64
		sawEOF        bool
		want          bool
	}{
		{"no body", 1, 0, 0, false, false},
		{"declared, none read", 1, 100000, 0, false, true},
		{"declared, part read", 1, 100000, 99999, false, true},
		{"declared, all read without EOF", 1, 100000, 100000, false, false},
		{"declared, read to EOF", 1, 100000, 100000, true, false},
		{"chunked, part read", 1, -1, 10, false, true},
		{"chunked, read to EOF", 1, -1, 10, true, false},
		{"HTTP/2, none read", 2, 100000, 0, false, false},
		{"HTTP/2, chunked", 2, -1, 0, false, false},
	} {
		if got := bodyLeftUnread(tc.protoMajor, tc.contentLength, tc.read, tc.sawEOF); got != tc.want {
			t.Errorf("%s: bodyLeftUnread = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// bodyTestServer serves a storeless Server with anonymous requests allowed in, the token "admin"
// for a member of system:masters, who may do everything, and the token "lowly" for a user who may
// do nothing, under the given request timeout.
func bodyTestServer(t *testing.T, requestTimeout time.Duration, http2 bool) *httptest.Server {
	t.Helper()
	scheme, err := builtin.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{
		Scheme: scheme, Resources: builtin.Resources(),
		Storage: func(*registry.Resource) (storage.Interface, error) { return nil, nil },
		Authenticator: AuthenticatorFunc(func(r *http.Request) (*UserInfo, bool, error) {
			switch r.Header.Get("Authorization") {
			case "Bearer admin":
				return &UserInfo{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}, true, nil
			case "Bearer lowly":
				return &UserInfo{Name: "lowly", Groups: []string{"system:authenticated"}}, true, nil
			}
			return nil, false, nil
		}),
		AnonymousAuth:  true,
		Authorizer:     PrivilegedGroups{"system:masters"},
		RequestTimeout: requestTimeout,
		Clock:          clocktesting.NewFakeClock(testEpoch),
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(s)
	if http2 {
		srv.EnableHTTP2 = true
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv
}

// never bounds the waits of these tests: a server that has not answered by then never will. It is
// no measure of how fast an answer comes.
const never = 30 * time.Second

// sendPartial writes a request's line and headers and the first part of its body, and leaves the
// rest of the body unsent.
func sendPartial(t *testing.T, conn net.Conn, method, path string, headers []string, partial string) {
	t.Helper()
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: skiff\r\nContent-Type: application/json\r\n%s\r\n%s",
		method, path, strings.Join(append(headers, ""), "\r\n"), partial)
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
}

// answerAndClose reads the answer to a request whose body was not sent whole, and then the
// connection to its end: the server must neither wait for the body nor keep the connection.
func answerAndClose(t *testing.T, conn net.Conn) (*http.Response, metav1.Status) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(never))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer while the body is incomplete: %v", err)
	}
	var status metav1.Status
	if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
		t.Fatalf("answer %d is not a Status: %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Fatalf("the connection was not closed after the answer: %v", err)
	}
	return resp, status
}

// TestAnswerDoesNotWaitForTheBody: a request refused on its headers (unauthenticated, forbidden,
// a resource that does not exist, a declared body over the limit) is answered while its body is
// still incomplete, and its connection is closed. The request timeout is an hour, so no answer
// here can come from it.
func TestAnswerDoesNotWaitForTheBody(t *testing.T) {
	srv := bodyTestServer(t, time.Hour, false)
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		headers []string
		partial string
		code    int
		reason  metav1.StatusReason
	}{
		{name: "anonymous", method: http.MethodPost, path: "/api/v1/namespaces/default/configmaps",
			headers: []string{"Content-Length: 100000"}, partial: "{",
			code: http.StatusForbidden, reason: metav1.StatusReasonForbidden},
		{name: "anonymous, chunked", method: http.MethodPost, path: "/api/v1/namespaces/default/configmaps",
			headers: []string{"Transfer-Encoding: chunked"}, partial: "1\r\n{\r\n",
			code: http.StatusForbidden, reason: metav1.StatusReasonForbidden},
		{name: "forbidden user", method: http.MethodPost, path: "/api/v1/namespaces/default/configmaps",
			headers: []string{"Content-Length: 100000", "Authorization: Bearer lowly"}, partial: "{",
			code: http.StatusForbidden, reason: metav1.StatusReasonForbidden},
		{name: "unknown token", method: http.MethodPut, path: "/api/v1/namespaces/default/configmaps/a",
			headers: []string{"Content-Length: 100000", "Authorization: Bearer nobody"}, partial: "{",
			code: http.StatusUnauthorized, reason: metav1.StatusReasonUnauthorized},
		{name: "unknown resource", method: http.MethodPost, path: "/api/v1/namespaces/default/nosuchthings",
			headers: []string{"Content-Length: 100000", "Authorization: Bearer admin"}, partial: "{",
			code: http.StatusNotFound, reason: metav1.StatusReasonNotFound},
		{name: "declared body over the limit", method: http.MethodPost, path: "/api/v1/namespaces/default/configmaps",
			headers: []string{fmt.Sprintf("Content-Length: %d", 10*maxBodyBytes), "Authorization: Bearer admin"}, partial: "{",
			code: http.StatusRequestEntityTooLarge, reason: metav1.StatusReasonRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			sendPartial(t, conn, tc.method, tc.path, tc.headers, tc.partial)
			resp, status := answerAndClose(t, conn)
			if resp.StatusCode != tc.code || status.Reason != tc.reason {
				t.Fatalf("got %d %q (%s), want %d %q", resp.StatusCode, status.Reason, status.Message, tc.code, tc.reason)
			}
		})
	}
}

// TestStalledBodyTimesOut: an authorized request whose body stops coming is answered 504 at the
// request timeout, and its connection is closed.
func TestStalledBodyTimesOut(t *testing.T) {
	srv := bodyTestServer(t, 200*time.Millisecond, false)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sendPartial(t, conn, http.MethodPost, "/api/v1/namespaces/default/configmaps",
		[]string{"Content-Length: 100000", "Authorization: Bearer admin"}, "{")
	resp, status := answerAndClose(t, conn)
	if resp.StatusCode != http.StatusGatewayTimeout || status.Reason != metav1.StatusReasonTimeout {
		t.Fatalf("got %d %q (%s), want 504 Timeout", resp.StatusCode, status.Reason, status.Message)
	}
}

// TestRefusedWholeBodyKeepsTheConnection: a refused request whose body came whole with it keeps
// its connection for the next request (what is already there is taken, not let go).
func TestRefusedWholeBodyKeepsTheConnection(t *testing.T) {
	srv := bodyTestServer(t, time.Hour, false)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(never))
	br := bufio.NewReader(conn)
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`
	sendPartial(t, conn, http.MethodPost, "/api/v1/namespaces/default/configmaps",
		[]string{fmt.Sprintf("Content-Length: %d", len(body))}, body)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || resp.Close {
		t.Fatalf("got %d, close %v; want 403 on a connection kept open", resp.StatusCode, resp.Close)
	}
	if _, err := io.WriteString(conn, "GET /version HTTP/1.1\r\nHost: skiff\r\nAuthorization: Bearer admin\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	next, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the connection did not carry the next request: %v", err)
	}
	next.Body.Close()
	if next.StatusCode != http.StatusOK {
		t.Fatalf("next request on the connection: %d", next.StatusCode)
	}
}

// TestAnswerDoesNotWaitForTheBodyHTTP2: over HTTP/2 too, a refused request is answered while its
// body is incomplete.
func TestAnswerDoesNotWaitForTheBodyHTTP2(t *testing.T) {
	srv := bodyTestServer(t, time.Hour, true)
	ctx, cancel := context.WithTimeout(context.Background(), never)
	defer cancel()
	// One byte of the body, then nothing until the test ends.
	body := io.MultiReader(strings.NewReader("{"), stalledReader{ctx})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/api/v1/namespaces/default/configmaps", body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 100000
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("no answer while the body is incomplete: %v", err)
	}
	defer func() {
		// The client's transport stops sending the stalled body first, then lets the stream go.
		cancel()
		resp.Body.Close()
	}()
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("got %s %d, want HTTP/2 403", resp.Proto, resp.StatusCode)
	}
}

// stalledReader is a body that stops: its reads wait until ctx ends.
type stalledReader struct{ ctx context.Context }

func (r stalledReader) Read([]byte) (int, error) {
	<-r.ctx.Done()
	return 0, r.ctx.Err()
}
