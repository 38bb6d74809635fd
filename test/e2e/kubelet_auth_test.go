package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKubeletAPIAuthorization: the kubelet's HTTPS API authenticates bearer tokens through a
// TokenReview and authorizes through SubjectAccessReviews on the node's subresources. A service
// account bound to nothing is refused /pods and exec; one bound to nodes/proxy gets through;
// kubectl logs and exec (the API server's client certificate, system:kubelet-api-admin) still work.
func TestKubeletAPIAuthorization(t *testing.T) {
	c := newWorkerCluster(t)
	c.kubectl("run", "talker", "--image=localhost/busybox:local", "--", "sh", "-c", "echo hello-from-the-log; exec httpd -f -p 8081")
	c.kubectl("wait", "--for=condition=Ready", "pod/talker", "--timeout=90s")
	c.kubectl("create", "serviceaccount", "lonely")
	c.kubectl("create", "serviceaccount", "prober")
	c.kubectl("create", "clusterrole", "kubelet-proxy", "--verb=get,create", "--resource=nodes/proxy")
	c.kubectl("create", "clusterrolebinding", "prober-kubelet-proxy", "--clusterrole=kubelet-proxy", "--serviceaccount=default:prober")
	lonely := strings.TrimSpace(c.kubectl("create", "token", "lonely", "--duration=1h"))
	prober := strings.TrimSpace(c.kubectl("create", "token", "prober", "--duration=1h"))
	ca := filepath.Join(c.dataDir, "pki", "ca.crt")
	kubelet := "https://127.0.0.1:" + itoa(c.kubeletPort)
	exec := kubelet + "/exec/default/talker/talker?command=id&output=1"

	if code, body := curlCode(t, "--cacert", ca, kubelet+"/pods"); code != "401" {
		t.Errorf("kubelet /pods without credentials = %s %s, want 401", code, body)
	}
	if code, body := curlCode(t, "--cacert", ca, "-H", "Authorization: Bearer not-a-token", kubelet+"/pods"); code != "401" {
		t.Errorf("kubelet /pods with a bad token = %s %s, want 401", code, body)
	}
	code, body := curlCode(t, "--cacert", ca, "-H", "Authorization: Bearer "+lonely, kubelet+"/pods")
	if code != "403" {
		t.Errorf("unbound account: kubelet /pods = %s %s, want 403", code, body)
	}
	mustContain(t, body, "Forbidden (user=system:serviceaccount:default:lonely, verb=get, resource=nodes, subresource(s)=[pods proxy])")
	code, body = curlCode(t, "--cacert", ca, "-X", "POST", "-H", "Authorization: Bearer "+lonely, exec)
	if code != "403" {
		t.Errorf("unbound account: kubelet exec = %s %s, want 403", code, body)
	}
	mustContain(t, body, "verb=create, resource=nodes, subresource(s)=[proxy]")

	// The binding reaches the API server's RBAC cache; the kubelet's cached denials (30 s) of this
	// account are none, as it asked nothing before.
	eventually(t, 60*time.Second, func() error {
		code, body := curlCode(t, "--cacert", ca, "-H", "Authorization: Bearer "+prober, kubelet+"/pods")
		if code != "200" || !strings.Contains(body, `"name":"talker"`) {
			return errString("kubelet /pods as prober: " + code + " " + body)
		}
		return nil
	})
	// Authorized for exec: what answers is the exec handler (no stream upgrade here), not a refusal.
	if code, body := curlCode(t, "--cacert", ca, "-X", "POST", "-H", "Authorization: Bearer "+prober, exec); code == "401" || code == "403" {
		t.Errorf("nodes/proxy create: kubelet exec = %s %s, want it past authorization", code, body)
	}
	// nodes/proxy does not grant nodes/stats.
	if code, _ := curlCode(t, "--cacert", ca, "-H", "Authorization: Bearer "+prober, kubelet+"/stats/summary"); code != "403" {
		t.Errorf("nodes/proxy: kubelet /stats/summary = %s, want 403", code)
	}

	eventually(t, 20*time.Second, func() error {
		if out, _ := c.kubectlErr("logs", "talker"); !strings.Contains(out, "hello-from-the-log") {
			return errString("logs: " + out)
		}
		return nil
	})
	mustContain(t, c.kubectl("exec", "talker", "--", "echo", "exec-works"), "exec-works")
}
