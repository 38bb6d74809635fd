package csrapproving

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"slices"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

func request(t *testing.T, cn string, orgs ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// csr is a kubelet client request for cn made by user in groups.
func csr(t *testing.T, cn, user string, groups ...string) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "node-csr"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    request(t, cn, "system:nodes"),
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth},
			Username:   user,
			Groups:     append(groups, "system:authenticated"),
		},
	}
}

const ingressMessage = "Auto approving the node's HTTP data plane client certificate."

// ingressCSR is a node's request for its data plane's client certificate, changed by mod.
func ingressCSR(t *testing.T, cn, user string, mod func(*certificatesv1.CertificateSigningRequest)) *certificatesv1.CertificateSigningRequest {
	c := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "node-csr"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    request(t, cn, "system:skiff:ingresses"),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			Username:   user,
			Groups:     []string{NodesGroup, "system:authenticated"},
		},
	}
	if mod != nil {
		mod(c)
	}
	return c
}

func TestApprove(t *testing.T) {
	with := func(c *certificatesv1.CertificateSigningRequest, mod func(*certificatesv1.CertificateSigningRequest)) *certificatesv1.CertificateSigningRequest {
		mod(c)
		return c
	}
	tests := []struct {
		name    string
		csr     *certificatesv1.CertificateSigningRequest
		message string // the approval's message; "" when nothing is approved
	}{
		{"bootstrap token joins", csr(t, "system:node:worker-1", "system:bootstrap:abcdef", BootstrappersGroup), "Auto approving kubelet client certificate."},
		{"node renews itself", csr(t, "system:node:worker-1", "system:node:worker-1", NodesGroup), "Auto approving self kubelet client certificate."},
		{"node asks for another node", csr(t, "system:node:worker-2", "system:node:worker-1", NodesGroup), ""},
		{"ordinary user", csr(t, "system:node:worker-1", "alice", "dev"), ""},
		{"admin is not auto-approved either", csr(t, "system:node:worker-1", "kubernetes-admin", "system:masters"), ""},
		{"bootstrap token, wrong organization", with(csr(t, "system:node:worker-1", "system:bootstrap:abcdef", BootstrappersGroup), func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Request = request(t, "system:node:worker-1", "system:masters")
		}), ""},
		{"bootstrap token, serving signer", with(csr(t, "system:node:worker-1", "system:bootstrap:abcdef", BootstrappersGroup), func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.SignerName = certificatesv1.KubeletServingSignerName
		}), ""},
		{"bootstrap token, server usage", with(csr(t, "system:node:worker-1", "system:bootstrap:abcdef", BootstrappersGroup), func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
		}), ""},
		{"already denied", with(csr(t, "system:node:worker-1", "system:bootstrap:abcdef", BootstrappersGroup), func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}}
		}), ""},
		{"node asks for its data plane's client", ingressCSR(t, "system:skiff:ingress:worker-1", "system:node:worker-1", nil), ingressMessage},
		{"data plane client of another node", ingressCSR(t, "system:skiff:ingress:worker-2", "system:node:worker-1", nil), ""},
		{"data plane client in another group", ingressCSR(t, "system:skiff:ingress:worker-1", "system:node:worker-1", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Request = request(t, "system:skiff:ingress:worker-1", "system:skiff:ingresses", "system:masters")
		}), ""},
		{"data plane client by a bootstrap token", ingressCSR(t, "system:skiff:ingress:worker-1", "system:bootstrap:abcdef", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Groups = []string{BootstrappersGroup, "system:authenticated"}
		}), ""},
		{"data plane client outside system:nodes", ingressCSR(t, "system:skiff:ingress:worker-1", "system:node:worker-1", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Groups = []string{"system:authenticated"}
		}), ""},
		{"data plane client with a server usage", ingressCSR(t, "system:skiff:ingress:worker-1", "system:node:worker-1", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = append(c.Spec.Usages, certificatesv1.UsageServerAuth)
		}), ""},
		{"data plane client from the kubelet signer", ingressCSR(t, "system:skiff:ingress:worker-1", "system:node:worker-1", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.SignerName = certificatesv1.KubeAPIServerClientKubeletSignerName
		}), ""},
		{"already approved", with(csr(t, "system:node:worker-1", "system:bootstrap:abcdef", BootstrappersGroup), func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
		}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := ctrltest.NewEnv(tt.csr)
			c, err := New(env.Deps, Config{})
			if err != nil {
				t.Fatal(err)
			}
			ctrltest.Seed(t, env.Factory.Certificates().V1().CertificateSigningRequests().Informer(), tt.csr)
			if err := c.Sync(context.Background(), tt.csr.Name); err != nil {
				t.Fatal(err)
			}
			writes := env.Writes()
			var want []string
			if tt.message != "" {
				want = []string{"update certificatesigningrequests/approval node-csr"}
			}
			if got := ctrltest.Describe(writes); !slices.Equal(got, want) {
				t.Fatalf("actions %q, want %q", got, want)
			}
			if tt.message == "" {
				return
			}
			written := writes[0].(clienttesting.UpdateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
			last := written.Status.Conditions[len(written.Status.Conditions)-1]
			if last.Type != certificatesv1.CertificateApproved || last.Status != corev1.ConditionTrue || last.Reason != "AutoApproved" ||
				last.Message != tt.message || !last.LastUpdateTime.Time.Equal(ctrltest.Epoch()) {
				t.Fatalf("condition %+v", last)
			}
		})
	}
}
