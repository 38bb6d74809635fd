package inprocess_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiff-sh/skiff/internal/apiserver/inprocess"
	"github.com/skiff-sh/skiff/internal/pki"
)

// chain issues a client certificate for user from a fresh CA: leaf, then CA.
func chain(t *testing.T, user string) []*x509.Certificate {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	ca, err := pki.LoadOrCreateCA(dir, "ca", "test-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	certPath, _, err := ca.EnsureLeaf(dir, "client", pki.Leaf{CommonName: user, Organization: []string{"g1"}, Client: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Clean(certPath))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := pki.ParseCertificate(data)
	if err != nil {
		t.Fatal(err)
	}
	return []*x509.Certificate{leaf, ca.Cert}
}

func newTransport(t *testing.T, h http.Handler) *inprocess.Transport {
	t.Helper()
	tr, err := inprocess.New(h, inprocess.Fixed(chain(t, "system:kube-scheduler")))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestRequestAsTheServerWouldSeeIt(t *testing.T) {
	var seen *http.Request
	var body []byte
	tr := newTransport(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Answer", "42")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	req, err := http.NewRequest(http.MethodPost, "https://127.0.0.1:6443/api/v1/namespaces/ns/pods?fieldManager=me&dryRun=All", strings.NewReader(`{"kind":"Pod"}`))
	if err != nil {
		t.Fatal(err)
	}
	closed := &closeRecorder{Reader: strings.NewReader(`{"kind":"Pod"}`)}
	req.Body = closed
	req.Header.Set("Content-Type", "application/json")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || resp.Status != "201 Created" || string(got) != `{"ok":true}` || resp.Header.Get("X-Answer") != "42" {
		t.Fatalf("response %d %q %q %v", resp.StatusCode, resp.Status, got, resp.Header)
	}
	if string(body) != `{"kind":"Pod"}` {
		t.Errorf("handler read body %q", body)
	}
	if seen.Method != http.MethodPost || seen.URL.Path != "/api/v1/namespaces/ns/pods" || seen.URL.Query().Get("fieldManager") != "me" ||
		seen.RequestURI != "/api/v1/namespaces/ns/pods?fieldManager=me&dryRun=All" || seen.URL.Host != "" || seen.Host != "127.0.0.1:6443" {
		t.Errorf("request line: %s %v %q host %q", seen.Method, seen.URL, seen.RequestURI, seen.Host)
	}
	if seen.RemoteAddr != "127.0.0.1:0" || seen.ProtoMajor != 1 || seen.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request: remote %q proto %d headers %v", seen.RemoteAddr, seen.ProtoMajor, seen.Header)
	}
	if seen.TLS == nil || len(seen.TLS.PeerCertificates) != 1 || seen.TLS.PeerCertificates[0].Subject.CommonName != "system:kube-scheduler" ||
		len(seen.TLS.VerifiedChains) != 1 || len(seen.TLS.VerifiedChains[0]) != 2 {
		t.Fatalf("TLS state: %+v", seen.TLS)
	}
	if err := seen.TLS.PeerCertificates[0].CheckSignatureFrom(seen.TLS.VerifiedChains[0][1]); err != nil {
		t.Errorf("the verified chain does not verify: %v", err)
	}
	if !closed.closed.Load() {
		t.Error("the request body was never closed")
	}
}

type closeRecorder struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeRecorder) Close() error { c.closed.Store(true); return nil }

func TestImplicitStatusAndSniffedContentType(t *testing.T) {
	tr := newTransport(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/text":
			_, _ = w.Write([]byte("plain words"))
		case "/empty":
		}
	}))
	for path, want := range map[string]string{"/text": "text/plain; charset=utf-8", "/empty": ""} {
		req, _ := http.NewRequest(http.MethodGet, "https://h"+path, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != want {
			t.Errorf("%s: %d %q %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
}

func TestStreamingAndClientClose(t *testing.T) {
	handlerDone := make(chan error, 1)
	tr := newTransport(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("first\n"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			handlerDone <- r.Context().Err()
		case <-time.After(time.Minute):
			handlerDone <- errors.New("the handler's context was never cancelled")
		}
	}))
	req, _ := http.NewRequest(http.MethodGet, "https://h/api/v1/pods?watch=true", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first\n" {
		t.Fatalf("first chunk %q, %v", buf, err)
	}
	_ = resp.Body.Close()
	if err := <-handlerDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("handler: %v", err)
	}
}

func TestCancelBeforeHeadersFreesTheHandler(t *testing.T) {
	wrote := make(chan error, 1)
	tr := newTransport(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		_, err := w.Write([]byte("too late"))
		wrote <- err
	}))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://h/slow", nil)
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("RoundTrip: %v", err)
	}
	select {
	case err := <-wrote:
		if err == nil {
			t.Fatal("a write with no reader succeeded")
		}
	case <-time.After(time.Minute):
		t.Fatal("the handler's write blocked with nobody to read it")
	}
}

func TestAbortedResponse(t *testing.T) {
	tr := newTransport(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("part"))
		panic(http.ErrAbortHandler)
	}))
	req, _ := http.NewRequest(http.MethodGet, "https://h/x", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil || string(b) != "part" {
		t.Fatalf("read %q, %v: want the part written, then an error", b, err)
	}
}

// TestClientGo drives a typed clientset through the transport: a GET decoded from JSON and a
// watch decoded event by event, as components use them.
func TestClientGo(t *testing.T) {
	pod := corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "5"}}
	tr := newTransport(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" {
			for _, rv := range []string{"6", "7"} {
				p := pod
				p.ResourceVersion = rv
				raw, _ := json.Marshal(p)
				ev, _ := json.Marshal(metav1.WatchEvent{Type: string(watch.Modified), Object: runtimeRaw(raw)})
				_, _ = w.Write(append(ev, '\n'))
				w.(http.Flusher).Flush()
			}
			<-r.Context().Done()
			return
		}
		_ = json.NewEncoder(w).Encode(pod)
	}))
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:6443", Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := cs.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
	if err != nil || got.Name != "p" || got.ResourceVersion != "5" {
		t.Fatalf("get: %v %v", got, err)
	}
	w, err := cs.CoreV1().Pods("ns").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var rvs []string
	for len(rvs) < 2 {
		select {
		case ev := <-w.ResultChan():
			rvs = append(rvs, ev.Object.(*corev1.Pod).ResourceVersion)
		case <-time.After(time.Minute):
			t.Fatalf("watch events so far: %v", rvs)
		}
	}
	if strings.Join(rvs, ",") != "6,7" {
		t.Fatalf("watch events: %v", rvs)
	}
}

func runtimeRaw(raw []byte) runtime.RawExtension { return runtime.RawExtension{Raw: raw} }
