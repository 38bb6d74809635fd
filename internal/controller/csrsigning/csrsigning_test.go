package csrsigning

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
	"github.com/skiff-sh/skiff/internal/pki"
)

// csrBuilder makes test requests: newCSR("n").cn("system:node:a").approved().obj().
type csrBuilder struct {
	t    *testing.T
	csr  *certificatesv1.CertificateSigningRequest
	tmpl x509.CertificateRequest
}

func newCSR(t *testing.T, name string) *csrBuilder {
	return &csrBuilder{t: t, csr: &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			Username:   "system:bootstrap:abcdef",
		},
	}, tmpl: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:worker-1", Organization: []string{"system:nodes"}}}}
}

func (b *csrBuilder) subject(cn string, orgs ...string) *csrBuilder {
	b.tmpl.Subject = pkix.Name{CommonName: cn, Organization: orgs}
	return b
}
func (b *csrBuilder) dns(names ...string) *csrBuilder { b.tmpl.DNSNames = names; return b }
func (b *csrBuilder) ip(ip string) *csrBuilder {
	b.tmpl.IPAddresses = append(b.tmpl.IPAddresses, net.ParseIP(ip))
	return b
}
func (b *csrBuilder) signer(s string) *csrBuilder { b.csr.Spec.SignerName = s; return b }
func (b *csrBuilder) usages(u ...certificatesv1.KeyUsage) *csrBuilder {
	b.csr.Spec.Usages = u
	return b
}
func (b *csrBuilder) seconds(s int32) *csrBuilder { b.csr.Spec.ExpirationSeconds = ptr.To(s); return b }
func (b *csrBuilder) condition(t certificatesv1.RequestConditionType) *csrBuilder {
	b.csr.Status.Conditions = append(b.csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue})
	return b
}
func (b *csrBuilder) approved() *csrBuilder { return b.condition(certificatesv1.CertificateApproved) }
func (b *csrBuilder) issued() *csrBuilder {
	b.csr.Status.Certificate = []byte("-----BEGIN CERTIFICATE-----\n")
	return b
}

func (b *csrBuilder) obj() *certificatesv1.CertificateSigningRequest {
	b.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &b.tmpl, key)
	if err != nil {
		b.t.Fatal(err)
	}
	out := b.csr.DeepCopy()
	out.Spec.Request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	return out
}

func testCA(t *testing.T) *pki.CA {
	t.Helper()
	ca, err := pki.LoadOrCreateCA(t.TempDir(), "ca", "test-ca", ctrltest.Epoch().Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// syncOne runs one Sync of csr and returns the written object, if any, and the actions.
func syncOne(t *testing.T, ca *pki.CA, csr *certificatesv1.CertificateSigningRequest) (*certificatesv1.CertificateSigningRequest, []string) {
	t.Helper()
	env := ctrltest.NewEnv(csr)
	c, err := New(env.Deps, Config{CA: ca, Duration: 30 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Certificates().V1().CertificateSigningRequests().Informer(), csr)
	if err := c.Sync(context.Background(), csr.Name); err != nil {
		t.Fatal(err)
	}
	writes := env.Writes()
	var written *certificatesv1.CertificateSigningRequest
	for _, a := range writes {
		if u, ok := a.(clienttesting.UpdateAction); ok {
			written = u.GetObject().(*certificatesv1.CertificateSigningRequest)
		}
	}
	return written, ctrltest.Describe(writes)
}

func TestSignsApprovedKubeletClientRequest(t *testing.T) {
	ca := testCA(t)
	written, actions := syncOne(t, ca, newCSR(t, "node-csr-1").seconds(3600).approved().obj())
	if want := []string{"update certificatesigningrequests/status node-csr-1"}; !slices.Equal(actions, want) {
		t.Fatalf("actions %q, want %q", actions, want)
	}
	cert, err := pki.ParseCertificate(written.Status.Certificate)
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.CheckSignatureFrom(ca.Cert); err != nil {
		t.Fatalf("certificate does not verify against the CA: %v", err)
	}
	if cert.Subject.CommonName != "system:node:worker-1" || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
		t.Fatalf("subject %s", cert.Subject)
	}
	now := ctrltest.Epoch()
	if !cert.NotBefore.Equal(now.Add(-backdate)) || !cert.NotAfter.Equal(now.Add(time.Hour)) {
		t.Fatalf("validity %s - %s, want %s - %s", cert.NotBefore, cert.NotAfter, now.Add(-backdate), now.Add(time.Hour))
	}
	if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) || cert.KeyUsage != x509.KeyUsageDigitalSignature || cert.IsCA {
		t.Fatalf("usages %v %v, isCA %v", cert.KeyUsage, cert.ExtKeyUsage, cert.IsCA)
	}
	if len(written.Status.Conditions) != 1 {
		t.Fatalf("conditions changed: %+v", written.Status.Conditions)
	}
}

func TestSigns(t *testing.T) {
	tests := []struct {
		name   string
		csr    *csrBuilder
		failed string // the Failed condition's message; "" when a certificate is issued
	}{
		{"kubelet client with RSA usages", newCSR(t, "a").usages(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth), ""},
		{"kubelet client: wrong common name", newCSR(t, "a").subject("alice", "system:nodes"), "subject common name does not begin with system:node:"},
		{"kubelet client: extra organization", newCSR(t, "a").subject("system:node:a", "system:nodes", "system:masters"), "subject organization is not system:nodes"},
		{"kubelet client: DNS name", newCSR(t, "a").dns("a.example"), "DNS subjectAltNames are not allowed"},
		{"kubelet client: server usage", newCSR(t, "a").usages(certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth),
			"usages did not match [client auth digital signature key encipherment]"},
		{"kubelet serving", newCSR(t, "a").signer(certificatesv1.KubeletServingSignerName).dns("worker-1").ip("10.0.0.7").
			usages(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth), ""},
		{"kubelet serving without names", newCSR(t, "a").signer(certificatesv1.KubeletServingSignerName).
			usages(certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth), "DNS or IP subjectAltName is required"},
		{"kubelet serving: foreign common name", newCSR(t, "a").signer(certificatesv1.KubeletServingSignerName).subject("worker-1", "system:nodes").dns("worker-1").
			usages(certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth), "subject common name does not begin with system:node:"},
		{"api server client", newCSR(t, "a").signer(certificatesv1.KubeAPIServerClientSignerName).subject("alice", "dev").
			usages(certificatesv1.UsageClientAuth), ""},
		{"api server client: server usage", newCSR(t, "a").signer(certificatesv1.KubeAPIServerClientSignerName).subject("alice").
			usages(certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth), "invalid usage for client certificate: server auth"},
		{"api server client: no client auth", newCSR(t, "a").signer(certificatesv1.KubeAPIServerClientSignerName).subject("alice").
			usages(certificatesv1.UsageDigitalSignature), "missing required usage for client certificate: client auth"},
	}
	ca := testCA(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			written, actions := syncOne(t, ca, tt.csr.approved().obj())
			if len(actions) != 1 || written == nil {
				t.Fatalf("actions %q", actions)
			}
			if tt.failed == "" {
				if len(written.Status.Certificate) == 0 || hasFailed(written) {
					t.Fatalf("not issued: %+v", written.Status)
				}
				return
			}
			last := written.Status.Conditions[len(written.Status.Conditions)-1]
			if len(written.Status.Certificate) != 0 || last.Type != certificatesv1.CertificateFailed || last.Status != corev1.ConditionTrue ||
				last.Reason != "SignerValidationFailure" || last.Message != tt.failed || !last.LastUpdateTime.Time.Equal(ctrltest.Epoch()) {
				t.Fatalf("status %+v, want Failed %q", written.Status, tt.failed)
			}
		})
	}
}

func hasFailed(c *certificatesv1.CertificateSigningRequest) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == certificatesv1.CertificateFailed {
			return true
		}
	}
	return false
}

func TestLeavesAlone(t *testing.T) {
	tests := []struct {
		name string
		csr  *certificatesv1.CertificateSigningRequest
	}{
		{"pending", newCSR(t, "a").obj()},
		{"denied", newCSR(t, "a").condition(certificatesv1.CertificateDenied).obj()},
		{"already issued", newCSR(t, "a").approved().issued().obj()},
		{"already failed", newCSR(t, "a").approved().condition(certificatesv1.CertificateFailed).obj()},
		{"legacy-unknown signer", newCSR(t, "a").signer("kubernetes.io/legacy-unknown").approved().obj()},
		{"another domain's signer", newCSR(t, "a").signer("example.com/issuer").approved().obj()},
	}
	ca := testCA(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, actions := syncOne(t, ca, tt.csr); len(actions) != 0 {
				t.Fatalf("actions %q, want none", actions)
			}
		})
	}
}

func TestGrantedDuration(t *testing.T) {
	c := &Controller{duration: 30 * 24 * time.Hour}
	for _, tt := range []struct {
		seconds *int32
		want    time.Duration
	}{
		{nil, 30 * 24 * time.Hour},
		{ptr.To[int32](3600), time.Hour},
		{ptr.To[int32](60), minDuration},
		{ptr.To[int32](365 * 24 * 3600), 30 * 24 * time.Hour},
	} {
		if got := c.grantedDuration(tt.seconds); got != tt.want {
			t.Errorf("grantedDuration(%v) = %s, want %s", ptr.Deref(tt.seconds, -1), got, tt.want)
		}
	}
}

func TestRequiresCA(t *testing.T) {
	if _, err := New(ctrltest.NewEnv().Deps, Config{}); err == nil {
		t.Fatal("built without a CA")
	}
}
