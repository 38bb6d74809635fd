package dataplane

import (
	"net/http"
	"strings"
	"testing"

	"github.com/skiff-sh/skiff/internal/ingress/routes"
)

// TestSourcesMerge: two sources' tables on one port are served together, and replacing one
// source's table leaves the other's routes in place.
func TestSourcesMerge(t *testing.T) {
	_, a := upstream(t, "a")
	_, b := upstream(t, "b")
	s := startServer(t)
	src := NewSources(s)
	if err := src.Setter("ingress")(httpTable(routes.VirtualHost{Hostname: "a.test", Routes: []routes.Route{rt("a", prefix("/"), be("a", 1, a))}})); err != nil {
		t.Fatal(err)
	}
	if err := src.Set("gateway", httpTable(routes.VirtualHost{Hostname: "b.test", Routes: []routes.Route{rt("b", prefix("/"), be("b", 1, b))}})); err != nil {
		t.Fatal(err)
	}
	u := "http://" + addr(t, s, 80) + "/"
	for host, want := range map[string]string{"a.test": "a ", "b.test": "b "} {
		if code, body, _ := get(t, http.DefaultClient, u, host); code != 200 || !strings.HasPrefix(body, want) {
			t.Fatalf("%s: %d %q", host, code, body)
		}
	}
	if err := src.Set("ingress", routes.Table{}); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := get(t, http.DefaultClient, u, "a.test"); code != 404 {
		t.Fatalf("a.test after its source emptied: %d, want 404", code)
	}
	if code, body, _ := get(t, http.DefaultClient, u, "b.test"); code != 200 || !strings.HasPrefix(body, "b ") {
		t.Fatalf("b.test after the other source changed: %d %q", code, body)
	}
}
