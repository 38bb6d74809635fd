package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/pki"
)

// TestRBAC drives authorization as a user meets it: a service account's token through kubectl,
// the default roles, kubectl auth can-i and whoami, the escalation check, impersonation, and the
// Node authorizer with a kubelet's client certificate.
func TestRBAC(t *testing.T) {
	c := newCluster(t, "--controllers=clusterrole-aggregation")
	const ns = "rbac-e2e"
	const robot = "system:serviceaccount:" + ns + ":robot"
	c.kubectl("create", "namespace", ns)
	c.kubectl("create", "serviceaccount", "robot", "-n", ns)
	token := strings.TrimSpace(c.kubectl("create", "token", "robot", "-n", ns, "--duration=1h"))
	server := "https://127.0.0.1:" + itoa(c.ports[0])
	ca := filepath.Join(c.dataDir, "pki", "ca.crt")
	robotConfig := filepath.Join(c.dataDir, "robot.kubeconfig")
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: skiff, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: robot, user: {token: %q}}]
contexts: [{name: robot, context: {cluster: skiff, user: robot, namespace: %s}}]
current-context: robot
`, server, ca, token, ns)
	if err := os.WriteFile(robotConfig, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	asRobot := func(args ...string) (string, error) {
		return c.kubectlErr(append([]string{"--kubeconfig", robotConfig}, args...)...)
	}
	mustFail := func(out string, err error, wants ...string) {
		t.Helper()
		if err == nil {
			t.Fatalf("allowed, want a refusal:\n%s", out)
		}
		mustContain(t, out, wants...)
	}

	t.Run("no binding, no access", func(t *testing.T) {
		out, err := asRobot("get", "pods")
		mustFail(out, err, `User "`+robot+`" cannot list resource "pods" in API group "" in the namespace "`+ns+`"`)
		out, err = asRobot("get", "secrets", "-n", "kube-system")
		mustFail(out, err, `cannot list resource "secrets" in API group "" in the namespace "kube-system"`)
		out, err = asRobot("get", "nodes")
		mustFail(out, err, `cannot list resource "nodes" in API group "" at the cluster scope`)
	})

	t.Run("whoami", func(t *testing.T) {
		out, err := asRobot("auth", "whoami")
		if err != nil {
			t.Fatal(out)
		}
		mustContain(t, out, robot, "system:serviceaccounts:"+ns, "system:authenticated")
	})

	c.kubectl("create", "rolebinding", "robot-view", "--clusterrole=view", "--serviceaccount="+ns+":robot", "-n", ns)
	c.kubectl("create", "configmap", "settings", "-n", ns, "--from-literal=a=b")

	t.Run("view may read but not write", func(t *testing.T) {
		// The binding reaches the authorizer's cache and the aggregated view role its rules.
		eventually(t, 30*time.Second, func() error {
			_, err := asRobot("get", "configmap", "settings")
			return err
		})
		if out, err := asRobot("get", "pods"); err != nil {
			t.Fatal(out)
		}
		out, err := asRobot("create", "configmap", "mine", "--from-literal=x=y")
		mustFail(out, err, `cannot create resource "configmaps" in API group "" in the namespace "`+ns+`"`)
		out, err = asRobot("get", "secrets")
		mustFail(out, err, `cannot list resource "secrets"`)
		out, err = asRobot("get", "pods", "-n", "default")
		mustFail(out, err, `in the namespace "default"`)
		// Reading namespaces at the namespace scope reads this one namespace, not the others.
		if out, err := asRobot("get", "namespace", ns); err != nil {
			t.Fatal(out)
		}
		out, err = asRobot("get", "namespace", "default")
		mustFail(out, err, `User "`+robot+`" cannot get resource "namespaces" in API group "" in the namespace "default"`)
	})

	t.Run("can-i", func(t *testing.T) {
		if out, err := asRobot("auth", "can-i", "list", "pods"); err != nil || strings.TrimSpace(out) != "yes" {
			t.Fatalf("can-i list pods = %q, %v", out, err)
		}
		if out, _ := asRobot("auth", "can-i", "create", "pods"); strings.TrimSpace(out) != "no" {
			t.Fatalf("can-i create pods = %q", out)
		}
		out, err := asRobot("auth", "can-i", "--list")
		if err != nil {
			t.Fatal(out)
		}
		mustContain(t, out, "pods ", "configmaps ", "[get list watch]", "selfsubjectaccessreviews.authorization.k8s.io", "[create]")
		if strings.Contains(out, "secrets ") {
			t.Fatalf("can-i --list shows secrets:\n%s", out)
		}
		// The admin asks on another's behalf (SubjectAccessReview through impersonation-free can-i --as).
		if out := c.kubectl("auth", "can-i", "get", "configmaps", "-n", ns, "--as", robot); strings.TrimSpace(out) != "yes" {
			t.Fatalf("admin can-i --as = %q", out)
		}
	})

	t.Run("no escalation", func(t *testing.T) {
		out, err := asRobot("create", "clusterrolebinding", "pwn", "--clusterrole=cluster-admin", "--serviceaccount="+ns+":robot")
		mustFail(out, err, `cannot create resource "clusterrolebindings" in API group "rbac.authorization.k8s.io" at the cluster scope`)
		// With admin in its namespace it may bind roles it holds, but not cluster-admin.
		c.kubectl("create", "rolebinding", "robot-admin", "--clusterrole=admin", "--serviceaccount="+ns+":robot", "-n", ns)
		eventually(t, 30*time.Second, func() error {
			_, err := asRobot("create", "rolebinding", "helper-view", "--clusterrole=view", "--serviceaccount="+ns+":helper")
			return err
		})
		out, err = asRobot("create", "rolebinding", "pwn", "--clusterrole=cluster-admin", "--serviceaccount="+ns+":robot")
		mustFail(out, err, "is attempting to grant RBAC permissions not currently held")
		out, err = asRobot("create", "role", "wider", "--verb=*", "--resource=nodes")
		mustFail(out, err, "is attempting to grant RBAC permissions not currently held")
	})

	t.Run("impersonation", func(t *testing.T) {
		mustContain(t, c.kubectl("auth", "whoami", "--as", "jane", "--as-group", "devs"), "jane", "devs")
		out, err := c.kubectlErr("get", "pods", "-n", ns, "--as", "jane")
		mustFail(out, err, `User "jane" cannot list resource "pods"`)
		out, err = asRobot("get", "pods", "--as", "system:admin")
		mustFail(out, err, `cannot impersonate resource "users" in API group "" at the cluster scope`)
	})

	t.Run("kubelet credentials reach only their node's secrets", func(t *testing.T) {
		c.kubectl("create", "secret", "generic", "node-a-secret", "-n", ns, "--from-literal=k=v")
		c.stdin(`apiVersion: v1
kind: Pod
metadata: {name: on-a, namespace: `+ns+`}
spec:
  nodeName: node-a
  serviceAccountName: robot
  automountServiceAccountToken: false
  containers: [{name: c, image: busybox}]
  volumes: [{name: s, secret: {secretName: node-a-secret}}]
`, "create", "-f", "-")
		dir := t.TempDir()
		clusterCA, err := pki.LoadOrCreateCA(filepath.Join(c.dataDir, "pki"), "ca", "skiff-ca", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		get := func(leafName, cn string, groups ...string) string {
			t.Helper()
			cert, key, err := clusterCA.EnsureLeaf(dir, leafName, pki.Leaf{CommonName: cn, Organization: groups, Client: true}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			out, err := execOutput("curl", "-s", "--cacert", ca, "--cert", cert, "--key", key, server+"/api/v1/namespaces/"+ns+"/secrets/node-a-secret")
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		eventually(t, 30*time.Second, func() error {
			if out := get("node-a", "system:node:node-a", "system:nodes"); !strings.Contains(out, `"kind":"Secret"`) {
				return fmt.Errorf("node-a reading its pod's secret: %s", out)
			}
			return nil
		})
		mustContain(t, get("node-b", "system:node:node-b", "system:nodes"), `"code":403`,
			`User \"system:node:node-b\" cannot get resource \"secrets\" in API group \"\" in the namespace \"`+ns+`\": no relationship found between node 'node-b' and this object`)
		mustContain(t, get("nameless", "", "system:masters"), `"code":401`)
	})
}
