package apiserver

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// TestApplyDuplicateKeys: an apply configuration repeating a key is refused under
// fieldValidation=Strict with the YAML line, as kube-apiserver words it, and applied with a
// warning under Warn.
func TestApplyDuplicateKeys(t *testing.T) {
	c := startTestCluster(t)
	ns := c.namespace(t, "dup")
	transport, err := rest.TransportFor(c.admin)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	body := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dup\ndata:\n  foo: a\n  foo: b\n"
	apply := func(validation string) (int, string, string) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPatch,
			c.admin.Host+"/api/v1/namespaces/"+ns+"/configmaps/dup?fieldManager=test&fieldValidation="+validation, bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/apply-patch+yaml")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.Join(resp.Header.Values("Warning"), "\n"), string(out)
	}
	code, _, out := apply("Strict")
	if code != http.StatusBadRequest || !strings.Contains(out, `line 7: key \"foo\" already set in map`) {
		t.Fatalf("Strict: %d %s", code, out)
	}
	code, warning, out := apply("Warn")
	if code != http.StatusCreated || !strings.Contains(warning, `already set in map`) {
		t.Fatalf("Warn: %d %q %s", code, warning, out)
	}
}
