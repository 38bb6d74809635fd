package kubeletauth

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestAttributesFor(t *testing.T) {
	tests := []struct {
		method, path string
		verb         string
		subresources []string
	}{
		{"GET", "/pods", "get", []string{"pods", "proxy"}},
		{"GET", "/pods/", "get", []string{"pods", "proxy"}},
		{"GET", "/runningpods/", "get", []string{"pods", "proxy"}},
		{"GET", "/podsx", "get", []string{"proxy"}},
		{"GET", "/healthz", "get", []string{"healthz", "proxy"}},
		{"GET", "/configz", "get", []string{"configz", "proxy"}},
		{"GET", "/stats/summary", "get", []string{"stats"}},
		{"GET", "/metrics/cadvisor", "get", []string{"metrics"}},
		{"GET", "/metrics", "get", []string{"metrics"}},
		{"GET", "/logs/syslog", "get", []string{"log"}},
		{"POST", "/checkpoint/ns/p/c", "create", []string{"checkpoint"}},
		{"GET", "/flagz", "get", []string{"configz"}},
		{"GET", "/containerLogs/ns/p/c", "get", []string{"proxy"}},
		{"POST", "/exec/ns/p/c", "create", []string{"proxy"}},
		{"GET", "/exec/ns/p/c", "get", []string{"proxy"}},
		{"POST", "/portForward/ns/p", "create", []string{"proxy"}},
		{"PUT", "/x", "update", []string{"proxy"}},
		{"PATCH", "/x", "patch", []string{"proxy"}},
		{"DELETE", "/x", "delete", []string{"proxy"}},
		{"HEAD", "/pods", "", []string{"pods", "proxy"}},
	}
	for _, tt := range tests {
		got := AttributesFor(tt.method, tt.path, "n1")
		if got.Verb != tt.verb || !slices.Equal(got.Subresources, tt.subresources) || got.NodeName != "n1" || got.Path != tt.path {
			t.Errorf("AttributesFor(%s %s) = %+v, want verb %q subresources %v", tt.method, tt.path, got, tt.verb, tt.subresources)
		}
	}
}

// reviewer is a fake API server: tokens map to users, and allowed lists "user verb subresource".
type reviewer struct {
	client             *fake.Clientset
	tokenReviews, sars int
	lastSARs           []authorizationv1.SubjectAccessReviewSpec
}

func newReviewer(tokens map[string]authenticationv1.UserInfo, allowed []string) *reviewer {
	rv := &reviewer{client: fake.NewClientset()}
	rv.client.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		rv.tokenReviews++
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		u, ok := tokens[tr.Spec.Token]
		tr.Status = authenticationv1.TokenReviewStatus{Authenticated: ok, User: u}
		return true, tr, nil
	})
	rv.client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		rv.sars++
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		rv.lastSARs = append(rv.lastSARs, sar.Spec)
		ra := sar.Spec.ResourceAttributes
		sar.Status.Allowed = ra != nil && ra.Resource == "nodes" && ra.Name == "n1" && slices.Contains(allowed, sar.Spec.User+" "+ra.Verb+" "+ra.Subresource)
		return true, sar, nil
	})
	return rv
}

func certRequest(method, path, cn string, orgs ...string) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: cn, Organization: orgs}}
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}, VerifiedChains: [][]*x509.Certificate{{cert}}}
	return r
}

func tokenRequest(method, path, token string) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

func TestWrap(t *testing.T) {
	sa := authenticationv1.UserInfo{Username: "system:serviceaccount:team:reader", UID: "u1", Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	lonely := authenticationv1.UserInfo{Username: "system:serviceaccount:team:lonely", Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	rv := newReviewer(map[string]authenticationv1.UserInfo{"reader-token": sa, "lonely-token": lonely},
		[]string{"kube-apiserver-kubelet-client create proxy", "kube-apiserver-kubelet-client get proxy", sa.Username + " get proxy"})
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a, err := New(Config{Client: rv.client, NodeName: "n1", Clock: clock, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h := a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "served") }))
	do := func(r *http.Request) (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, strings.TrimSpace(w.Body.String())
	}
	tests := []struct {
		name     string
		req      *http.Request
		wantCode int
		want     string
	}{
		{"no credentials", httptest.NewRequest("GET", "/pods", nil), 401, "Unauthorized"},
		{"unknown token", tokenRequest("GET", "/pods", "nope"), 401, "Unauthorized"},
		{"basic auth is not a token", func() *http.Request {
			r := httptest.NewRequest("GET", "/pods", nil)
			r.SetBasicAuth("a", "b")
			return r
		}(), 401, "Unauthorized"},
		{"certificate without a name", certRequest("GET", "/pods", ""), 401, "Unauthorized"},
		{"API server exec", certRequest("POST", "/exec/ns/p/c", "kube-apiserver-kubelet-client"), 200, "served"},
		{"API server logs", certRequest("GET", "/containerLogs/ns/p/c", "kube-apiserver-kubelet-client"), 200, "served"},
		{"unbound account: pods", tokenRequest("GET", "/pods", "lonely-token"), 403,
			"Forbidden (user=system:serviceaccount:team:lonely, verb=get, resource=nodes, subresource(s)=[pods proxy])"},
		{"unbound account: exec", tokenRequest("POST", "/exec/ns/p/c", "lonely-token"), 403,
			"Forbidden (user=system:serviceaccount:team:lonely, verb=create, resource=nodes, subresource(s)=[proxy])"},
		{"nodes/proxy get: pods", tokenRequest("GET", "/pods", "reader-token"), 200, "served"},
		{"nodes/proxy get is not create: exec", tokenRequest("POST", "/exec/ns/p/c", "reader-token"), 403, "verb=create"},
		{"nodes/proxy is not nodes/stats", tokenRequest("GET", "/stats/summary", "reader-token"), 403, "subresource(s)=[stats]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := do(tt.req)
			if code != tt.wantCode || !strings.Contains(body, tt.want) {
				t.Fatalf("= %d %q, want %d %q", code, body, tt.wantCode, tt.want)
			}
		})
	}
	// The SubjectAccessReviews carried the token's user, groups and uid, on this node.
	var found bool
	for _, s := range rv.lastSARs {
		if s.User == sa.Username && s.UID == "u1" && slices.Equal(s.Groups, sa.Groups) && s.ResourceAttributes.Name == "n1" {
			found = true
		}
	}
	if !found {
		t.Errorf("no SubjectAccessReview for %s with its groups: %+v", sa.Username, rv.lastSARs)
	}
}

func TestReviewsAreCached(t *testing.T) {
	user := authenticationv1.UserInfo{Username: "u", Groups: []string{"system:authenticated"}}
	allowed := []string{"u get proxy"}
	rv := newReviewer(map[string]authenticationv1.UserInfo{"t": user}, allowed)
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a, err := New(Config{Client: rv.client, NodeName: "n1", Clock: clock, Log: slog.New(slog.DiscardHandler),
		TokenTTL: time.Minute, AllowedTTL: time.Minute, DeniedTTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h := a.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	serve := func(method, path string) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, tokenRequest(method, path, "t"))
		return w.Code
	}
	for range 2 {
		if serve("GET", "/containerLogs/a/b/c") != 200 {
			t.Fatal("allowed request refused")
		}
	}
	if rv.tokenReviews != 1 || rv.sars != 1 {
		t.Fatalf("two identical requests made %d token reviews and %d access reviews, want 1 and 1 (cached)", rv.tokenReviews, rv.sars)
	}
	for range 2 {
		if serve("POST", "/exec/a/b/c") != 403 {
			t.Fatal("denied request allowed")
		}
	}
	if rv.sars != 2 {
		t.Fatalf("a denial is not cached: %d access reviews", rv.sars)
	}
	// A denial expires sooner than an allowance: a new binding takes effect within DeniedTTL.
	allowed = append(allowed, "u create proxy")
	rv2 := newReviewer(map[string]authenticationv1.UserInfo{"t": user}, allowed)
	a.cfg.Client = rv2.client
	clock.Step(11 * time.Second)
	if serve("POST", "/exec/a/b/c") != 200 {
		t.Fatal("a denial outlived DeniedTTL")
	}
	if serve("GET", "/containerLogs/a/b/c") != 200 || rv2.sars != 1 || rv2.tokenReviews != 0 {
		t.Fatalf("allowance or token not cached within their TTL: %d access, %d token reviews", rv2.sars, rv2.tokenReviews)
	}
	clock.Step(time.Minute)
	serve("GET", "/containerLogs/a/b/c")
	if rv2.tokenReviews != 1 || rv2.sars != 2 {
		t.Fatalf("expired entries not reviewed again: %d token, %d access reviews", rv2.tokenReviews, rv2.sars)
	}
}

func TestCacheBounded(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := newTTLCache[bool](clock, 3)
	for _, k := range []string{"a", "b", "c", "d"} {
		c.put(k, true, time.Minute)
	}
	if len(c.entries) > 3 {
		t.Fatalf("cache holds %d entries, max 3", len(c.entries))
	}
	if _, ok := c.get("d"); !ok {
		t.Fatal("the newest entry was dropped")
	}
}

// BenchmarkWrapCached is the cost the kubelet API adds to a request once the token and the
// access decision are cached (the usual case: the API server's certificate, or a token in use).
func BenchmarkWrapCached(b *testing.B) {
	user := authenticationv1.UserInfo{Username: "u", Groups: []string{"system:authenticated"}}
	rv := newReviewer(map[string]authenticationv1.UserInfo{"t": user}, []string{"u get proxy"})
	a, err := New(Config{Client: rv.client, NodeName: "n1", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	h := a.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	r := tokenRequest("GET", "/containerLogs/a/b/c", "t")
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
	if rv.sars != 1 || rv.tokenReviews != 1 {
		b.Fatalf("reviews not cached: %d access, %d token", rv.sars, rv.tokenReviews)
	}
}
