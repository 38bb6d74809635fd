package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/pki"
)

// TestNodeRestrictionTokensAndEvictions drives the Node authorizer and NodeRestriction with a
// kubelet's client certificate (system:node:<name> in system:nodes, signed by the cluster CA): a
// node gets a service account token only bound to a pod of its own that uses the account, and
// evicts only its own pods; every other request is Forbidden in Kubernetes' words.
func TestNodeRestrictionTokensAndEvictions(t *testing.T) {
	c := newCluster(t)
	const ns = "noderestriction-e2e"
	c.kubectl("create", "namespace", ns)
	c.kubectl("create", "serviceaccount", "bot", "-n", ns)
	c.kubectl("create", "serviceaccount", "unused", "-n", ns)
	for _, p := range []struct{ name, node string }{{"on-a", "nr-node-a"}, {"on-b", "nr-node-b"}} {
		c.stdin(`apiVersion: v1
kind: Pod
metadata: {name: `+p.name+`, namespace: `+ns+`}
spec:
  nodeName: `+p.node+`
  serviceAccountName: bot
  automountServiceAccountToken: false
  containers: [{name: c, image: busybox}]
`, "create", "-f", "-")
	}
	uidOf := func(pod string) string {
		return strings.TrimSpace(c.kubectl("get", "pod", pod, "-n", ns, "-o", "jsonpath={.metadata.uid}"))
	}
	uidA, uidB := uidOf("on-a"), uidOf("on-b")

	server := "https://127.0.0.1:" + itoa(c.ports[0])
	caFile := filepath.Join(c.dataDir, "pki", "ca.crt")
	clusterCA, err := pki.LoadOrCreateCA(filepath.Join(c.dataDir, "pki"), "ca", "skiff-ca", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certDir := t.TempDir()
	cert, key, err := clusterCA.EnsureLeaf(certDir, "nr-node-a", pki.Leaf{CommonName: "system:node:nr-node-a", Organization: []string{"system:nodes"}, Client: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// post sends a JSON body as node nr-node-a and returns the response body and HTTP code.
	post := func(path, body string) string {
		t.Helper()
		out, err := execOutput("curl", "-s", "-w", "\ncode=%{http_code}", "--cacert", caFile, "--cert", cert, "--key", key,
			"-X", "POST", "-H", "Content-Type: application/json", "-d", body, server+path)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	tokenPath := "/api/v1/namespaces/" + ns + "/serviceaccounts/bot/token"
	tokenBody := func(pod, uid string) string {
		if pod == "" {
			return `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"audiences":["skiff"]}}`
		}
		return fmt.Sprintf(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"boundObjectRef":{"apiVersion":"v1","kind":"Pod","name":%q,"uid":%q}}}`, pod, uid)
	}
	evictBody := func(pod string) string {
		return fmt.Sprintf(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":%q,"namespace":%q}}`, pod, ns)
	}

	t.Run("token bound to its own pod", func(t *testing.T) {
		// The Node authorizer learns the pod's binding through its informer.
		eventually(t, 30*time.Second, func() error {
			if out := post(tokenPath, tokenBody("on-a", uidA)); !strings.Contains(out, "code=201") || !strings.Contains(out, `"token":"`) {
				return fmt.Errorf("token for its pod: %s", out)
			}
			return nil
		})
	})
	t.Run("tokens it may not have", func(t *testing.T) {
		mustContain(t, post(tokenPath, tokenBody("on-b", uidB)), "code=403",
			`serviceaccounts \"bot\" is forbidden: node requested token bound to a pod scheduled on a different node`)
		mustContain(t, post(tokenPath, tokenBody("", "")), "code=403", "node requested token not bound to a pod")
		mustContain(t, post(tokenPath, tokenBody("on-a", "")), "code=403", "node requested token with a pod binding without a uid")
		mustContain(t, post(tokenPath, tokenBody("on-a", "00000000-0000-0000-0000-000000000000")), "code=403",
			"the UID in the bound object reference (00000000-0000-0000-0000-000000000000) does not match the UID in record")
		mustContain(t, post("/api/v1/namespaces/"+ns+"/serviceaccounts/unused/token", tokenBody("on-a", uidA)), "code=403",
			`User \"system:node:nr-node-a\" cannot create resource \"serviceaccounts/token\" in API group \"\" in the namespace \"`+ns+`\": no relationship found between node 'nr-node-a' and this object`)
	})
	t.Run("a pod's token names the pod's node", func(t *testing.T) {
		// review returns the node extras a TokenReview reports for a fresh token bound to on-a.
		review := func() (name, uid string) {
			token := strings.TrimSpace(c.kubectl("create", "token", "bot", "-n", ns, "--bound-object-kind", "Pod",
				"--bound-object-name", "on-a", "--bound-object-uid", uidA))
			out := c.stdin(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"`+token+`"}}`,
				"create", "-f", "-", "-o", `go-template={{.status.authenticated}} {{index .status.user.extra "authentication.kubernetes.io/node-name"}} {{index .status.user.extra "authentication.kubernetes.io/node-uid"}}`)
			f := strings.Fields(strings.NewReplacer("[", " ", "]", " ", "<no value>", "").Replace(out))
			if len(f) < 2 || f[0] != "true" {
				t.Fatalf("token review: %q", out)
			}
			if len(f) > 2 {
				uid = f[2]
			}
			return f[1], uid
		}
		// No Node object nr-node-a exists: the token still names it, without a UID.
		if name, uid := review(); name != "nr-node-a" || uid != "" {
			t.Fatalf("node extras %q %q, want nr-node-a and no UID", name, uid)
		}
		c.stdin(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"nr-node-a"}}`, "create", "-f", "-")
		defer c.kubectl("delete", "node", "nr-node-a", "--wait=false")
		nodeUID := strings.TrimSpace(c.kubectl("get", "node", "nr-node-a", "-o", "jsonpath={.metadata.uid}"))
		if name, uid := review(); name != "nr-node-a" || uid != nodeUID {
			t.Fatalf("node extras %q %q, want nr-node-a and %s", name, uid, nodeUID)
		}
	})
	t.Run("evictions", func(t *testing.T) {
		mustContain(t, post("/api/v1/namespaces/"+ns+"/pods/on-b/eviction", evictBody("on-b")), "code=403",
			`pods \"on-b\" is forbidden: node nr-node-a can only evict pods with spec.nodeName set to itself`)
		if out := c.kubectl("get", "pod", "on-b", "-n", ns, "-o", "jsonpath={.metadata.deletionTimestamp}"); strings.TrimSpace(out) != "" {
			t.Fatalf("the refused eviction deleted on-b (deletionTimestamp %s)", out)
		}
		mustContain(t, post("/api/v1/namespaces/"+ns+"/pods/on-a/eviction", evictBody("on-a")), "code=201")
		// The pod is gone or going (no kubelet runs nr-node-a to confirm a graceful deletion).
		if out, err := c.kubectlErr("get", "pod", "on-a", "-n", ns, "-o", "jsonpath={.metadata.deletionTimestamp}"); err == nil && strings.TrimSpace(out) == "" {
			t.Fatalf("on-a was evicted but is not being deleted")
		}
	})
}
