package e2e

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestFrontProxyAuthentication: skiff trusts a front proxy as kube-apiserver does with
// --requestheader-*: a request with the front-proxy client certificate is the user its
// X-Remote-* headers name (with those groups), the same headers from a cluster user's certificate
// change nothing, and the front-proxy certificate is no user of its own.
func TestFrontProxyAuthentication(t *testing.T) {
	c := newCluster(t)
	pki := filepath.Join(c.dataDir, "pki")
	base := "https://127.0.0.1:" + strconv.Itoa(c.ports[0])
	review := `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
	curl := func(cert, key string, body string, args ...string) string {
		t.Helper()
		all := append([]string{"-s", "--cacert", filepath.Join(pki, "ca.crt"), "--cert", cert, "--key", key}, args...)
		if body != "" {
			all = append(all, "-X", "POST", "-H", "Content-Type: application/json", "-d", body)
		}
		out, err := execOutput("curl", all...)
		if err != nil {
			t.Fatalf("curl %v: %v\n%s", args, err, out)
		}
		return out
	}
	proxyCert, proxyKey := filepath.Join(pki, "front-proxy-client.crt"), filepath.Join(pki, "front-proxy-client.key")
	whoami := base + "/apis/authentication.k8s.io/v1/selfsubjectreviews"

	out := curl(proxyCert, proxyKey, review, "-H", "X-Remote-User: alice", "-H", "X-Remote-Group: devs", "-H", "X-Remote-Extra-Acme.com%2fteam: blue", whoami)
	mustContain(t, out, `"username":"alice"`, `"devs"`, `"system:authenticated"`, `"acme.com/team":["blue"]`)
	// The named user's rights, not the proxy's: alice may not list pods, system:masters may.
	mustContain(t, curl(proxyCert, proxyKey, "", "-H", "X-Remote-User: alice", base+"/api/v1/namespaces/default/pods"), `"code":403`, `User \"alice\" cannot list resource \"pods\"`)
	mustContain(t, curl(proxyCert, proxyKey, "", "-H", "X-Remote-User: root", "-H", "X-Remote-Group: system:masters", base+"/api/v1/namespaces/default/pods"), `"kind":"PodList"`)
	// No header: the proxy's certificate is no user of its own (401, as kube-apiserver answers).
	mustContain(t, curl(proxyCert, proxyKey, "", base+"/api/v1/namespaces/default/pods"), `"code":401`, `Unauthorized`)

	// A cluster user's certificate with the same headers is that user, the headers ignored.
	adminCert, adminKey := filepath.Join(c.dataDir, "admin.crt"), filepath.Join(c.dataDir, "admin.key")
	for file, field := range map[string]string{adminCert: "client-certificate-data", adminKey: "client-key-data"} {
		data, err := base64.StdEncoding.DecodeString(c.kubectl("config", "view", "--raw", "-o", "jsonpath={.users[0].user."+field+"}"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out = curl(adminCert, adminKey, review, "-H", "X-Remote-User: alice", whoami)
	mustContain(t, out, `"system:masters"`)
	mustNotContain(t, out, "alice")
}
