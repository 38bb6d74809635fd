package e2e

import (
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/pki/pkitest"
)

const rsaClientManifest = `apiVersion: v1
kind: Pod
metadata:
  name: bb
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: bb
    image: localhost/busybox:local
    command: ["sleep", "600"]
    volumeMounts: [{name: tools, mountPath: /tools}]
  volumes:
  - name: tools
    hostPath: {path: TOOLS}
`

// TestRSAOnlyClientsReachEveryTLSPort is issue 32's item 4 end to end. From a pod, the issue's
// reproduction (busybox wget --no-check-certificate to https://kubernetes.default.svc/version)
// answers: busybox's built-in TLS sends no signature_algorithms, so it needs the static RSA key
// exchange on an RSA certificate (before, alert 40 from every skiff port). A client that offers
// only RSA cipher suites (nettool tls-rsa) is served an RSA certificate by the API server, through
// the kubernetes Service, and by the kubelet's port on the node's address. From the host, the API
// server's port, the kubelet's and the node-local balancer's serve RSA to that client and ECDSA
// to a modern one.
func TestRSAOnlyClientsReachEveryTLSPort(t *testing.T) {
	requireRuntime(t)
	addr := testHostAddress(t)
	cidr := fmt.Sprintf("10.%d.%d.0/24", 96+rand.IntN(16), rand.IntN(256))
	c := newWorkerCluster(t, "--bind-address", addr, "--service-cidr", cidr)
	tools := filepath.Join(c.dataDir, "tools")
	buildNettool(t, tools)
	c.stdin(strings.ReplaceAll(rsaClientManifest, "TOOLS", tools), "apply", "-f", "-")
	eventually(t, 120*time.Second, func() error {
		out, err := c.kubectlErr("wait", "--for=condition=Ready", "pod/bb", "--timeout=2s")
		if err != nil {
			return errString(out)
		}
		return nil
	})

	// The reproduction, verbatim (the Service's rules may still be on their way).
	eventually(t, 60*time.Second, func() error {
		out, err := c.kubectlErr("exec", "bb", "--", "wget", "-qO-", "--no-check-certificate", "https://kubernetes.default.svc/version")
		if err != nil || !strings.Contains(out, `"gitVersion"`) {
			return fmt.Errorf("busybox wget to the API server: %v: %s", err, out)
		}
		return nil
	})
	kubelet := net.JoinHostPort(addr, strconv.Itoa(c.kubeletPort))
	for _, tc := range []struct{ url, want string }{
		{"https://kubernetes.default.svc/version", `"gitVersion"`},
		// Anonymous: the kubelet answers 401 after the handshake, which is all this is about.
		{"https://" + kubelet + "/healthz", "status="},
	} {
		out, err := c.kubectlErr("exec", "bb", "--", "/tools/nettool", "tls-rsa", tc.url)
		if err != nil || !strings.Contains(out, "key=RSA ") || !strings.Contains(out, tc.want) {
			t.Errorf("RSA-only client in a pod to %s: %v\n%s", tc.url, err, out)
		}
	}

	for _, hostPort := range []string{net.JoinHostPort(addr, strconv.Itoa(c.ports[0])), kubelet, net.JoinHostPort("127.0.0.1", strconv.Itoa(c.lbPort))} {
		for _, tc := range []struct {
			name   string
			client *tls.Config
			want   string
		}{
			{"RSA suites only", pkitest.RSAOnlyClient(nil, ""), "RSA"},
			{"TLS 1.3", &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}, "ECDSA"}, //nolint:gosec // only the served key is checked
		} {
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", hostPort, tc.client)
			if err != nil {
				t.Errorf("%s to %s: %v", tc.name, hostPort, err)
				continue
			}
			if got := pkitest.PublicKeyAlgorithm(conn.ConnectionState()); got != tc.want {
				t.Errorf("%s to %s: served %s, want %s", tc.name, hostPort, got, tc.want)
			}
			conn.Close()
		}
	}
}
