package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestServiceAccountKeyRotation (issue 30): `skiff certificate rotate-sa-key` on a running control
// plane. A pod's projected token and a `kubectl create token` token issued before the rotation
// keep authenticating; a token issued after carries the new key's kid; /openid/v1/jwks lists both
// keys, all without restarting the server. After --prune-retired-sa-keys the old token is refused
// and the new one still works.
func TestServiceAccountKeyRotation(t *testing.T) {
	c := newWorkerCluster(t)
	url := "https://127.0.0.1:" + itoa(c.ports[0])
	ca := filepath.Join(c.dataDir, "pki", "ca.crt")
	whoami := func(token string) (string, error) { return tokenWhoami(t, url, ca, token) }
	jwksKIDs := func() []string { return jwksKeyIDs(t, c) }

	c.stdin(`apiVersion: v1
kind: Pod
metadata: {name: sa-user}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: localhost/busybox:local
    command: ["sleep", "3600"]
`, "apply", "-f", "-")
	var podToken string
	eventually(t, 2*time.Minute, func() error {
		out, err := c.kubectlErr("exec", "sa-user", "--", "cat", "/var/run/secrets/kubernetes.io/serviceaccount/token")
		if err != nil {
			return errString("read the pod's token: " + err.Error() + " " + out)
		}
		podToken = strings.TrimSpace(out)
		return nil
	})
	before := strings.TrimSpace(c.kubectl("create", "token", "default", "--duration=1h"))
	oldKID := tokenHeaderKID(t, before)
	if got := tokenHeaderKID(t, podToken); got != oldKID {
		t.Fatalf("the pod's token has kid %q, kubectl create token's %q: one key signs both", got, oldKID)
	}
	if got := jwksKIDs(); !slices.Equal(got, []string{oldKID}) {
		t.Fatalf("JWKS before the rotation lists %v, want [%s]", got, oldKID)
	}

	out, err := execOutput(skiffBinary, "certificate", "rotate-sa-key", "--data-dir", c.dataDir)
	if err != nil {
		t.Fatalf("skiff certificate rotate-sa-key: %v\n%s", err, out)
	}
	t.Logf("rotate-sa-key: %s", out)
	mustContain(t, out, oldKID)

	after := strings.TrimSpace(c.kubectl("create", "token", "default", "--duration=1h"))
	newKID := tokenHeaderKID(t, after)
	if newKID == oldKID {
		t.Fatalf("a token issued after the rotation still has the old kid %s", oldKID)
	}
	mustContain(t, out, newKID)
	want := []string{oldKID, newKID}
	slices.Sort(want)
	if got := jwksKIDs(); !slices.Equal(got, want) {
		t.Fatalf("JWKS after the rotation lists %v, want both %v", got, want)
	}
	const user = "system:serviceaccount:default:default"
	for name, tok := range map[string]string{"the pod's projected token": podToken, "a token created before": before, "a token created after": after} {
		if got, err := whoami(tok); err != nil || got != user {
			t.Errorf("%s after the rotation: whoami = %q, %v; want %s", name, got, err, user)
		}
	}

	out, err = execOutput(skiffBinary, "certificate", "rotate-sa-key", "--data-dir", c.dataDir, "--prune-retired-sa-keys")
	if err != nil {
		t.Fatalf("skiff certificate rotate-sa-key --prune-retired-sa-keys: %v\n%s", err, out)
	}
	mustContain(t, out, oldKID)
	if got := jwksKIDs(); !slices.Equal(got, []string{newKID}) {
		t.Fatalf("JWKS after the prune lists %v, want [%s]", got, newKID)
	}
	if got, err := whoami(before); err == nil {
		t.Errorf("a token of the pruned key still authenticates as %q", got)
	}
	if got, err := whoami(after); err != nil || got != user {
		t.Errorf("a token of the signing key after the prune: whoami = %q, %v", got, err)
	}
}

// tokenHeaderKID is the kid in a JWT's header (not verified: the API server verifies).
func tokenHeaderKID(t *testing.T, token string) string {
	t.Helper()
	parsed, _, err := jwt.NewParser().ParseUnverified(token, jwt.MapClaims{})
	if err != nil {
		t.Fatalf("token %q: %v", token, err)
	}
	kid, _ := parsed.Header["kid"].(string)
	if kid == "" {
		t.Fatalf("token without a kid: %v", parsed.Header)
	}
	return kid
}

// tokenWhoami is `kubectl auth whoami` at url with nothing but token: the admin kubeconfig's
// client certificate would authenticate first.
func tokenWhoami(t *testing.T, url, ca, token string) (string, error) {
	t.Helper()
	empty := filepath.Join(t.TempDir(), "empty.kubeconfig")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := execOutput("kubectl", "--kubeconfig", empty, "--server", url, "--certificate-authority", ca,
		"--token", token, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	return strings.TrimSpace(out), err
}

// jwksKeyIDs are the sorted kids of c's /openid/v1/jwks.
func jwksKeyIDs(t *testing.T, c *cluster) []string {
	t.Helper()
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	raw := c.kubectl("get", "--raw", "/openid/v1/jwks")
	if err := json.Unmarshal([]byte(raw), &set); err != nil {
		t.Fatalf("JWKS %s: %v", raw, err)
	}
	var kids []string
	for _, k := range set.Keys {
		kids = append(kids, k.Kid)
	}
	slices.Sort(kids)
	return kids
}
