package dataplane

import (
	"io"
	"net/http"
	"testing"

	"github.com/skiff-sh/skiff/internal/ingress/routes"
)

// BenchmarkServerHTTP1 is one kept-alive HTTP/1.1 request through the data plane to a loopback
// backend per iteration, run in parallel (-cpu sets the clients): the data plane's own cost is
// the difference from BenchmarkBackendDirect.
func BenchmarkServerHTTP1(b *testing.B) {
	_, up := upstream(b, "a")
	s := New(Options{ListenAddress: func(routes.ListenerKey) string { return "127.0.0.1:0" }})
	if err := s.Set(httpTable(routes.VirtualHost{Routes: []routes.Route{rt("r", prefix("/"), be("a", 1, up))}})); err != nil {
		b.Fatal(err)
	}
	a, _ := s.Addr(routes.ListenerKey{Port: 80})
	benchGet(b, "http://"+a.String()+"/")
}

// BenchmarkBackendDirect is the same request straight to the backend.
func BenchmarkBackendDirect(b *testing.B) {
	_, up := upstream(b, "a")
	benchGet(b, "http://"+up+"/")
}

func benchGet(b *testing.B, u string) {
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := c.Get(u)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	})
}
