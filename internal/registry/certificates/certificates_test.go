package certificates

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/validationutil/errtest"
	"github.com/skiff-sh/skiff/internal/request"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func csrPEM(t *testing.T, cn string) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: []string{"system:nodes"}}}, newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func certPEM(t *testing.T) []byte {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: epoch, NotAfter: epoch.Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func newCSR(t *testing.T, mods ...func(*certificatesv1.CertificateSigningRequest)) *certificatesv1.CertificateSigningRequest {
	c := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "node-csr-abc"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    csrPEM(t, "system:node:a"),
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

func cond(t certificatesv1.RequestConditionType, s corev1.ConditionStatus) certificatesv1.CertificateSigningRequestCondition {
	return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: s, Reason: "Test"}
}

func resource(t *testing.T) (*registry.Resource, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	return NewResources(clk)[0], clk
}

func TestValidateCreate(t *testing.T) {
	badSignature := func(c *certificatesv1.CertificateSigningRequest) {
		// Change the signed subject (system:node:a -> system:node:b): the DER stays well formed,
		// the signature no longer covers it.
		block, _ := pem.Decode(c.Spec.Request)
		i := bytes.Index(block.Bytes, []byte("system:node:a"))
		if i < 0 {
			t.Fatal("subject not found in the request")
		}
		tampered := append([]byte(nil), block.Bytes...)
		tampered[i+len("system:node:a")-1] = 'b'
		c.Spec.Request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: tampered})
	}
	tests := []struct {
		name string
		mod  func(*certificatesv1.CertificateSigningRequest)
		want *errtest.Want
	}{
		{"valid", nil, nil},
		{"any name", func(c *certificatesv1.CertificateSigningRequest) { c.Name = "csr:Upper_Case" }, nil},
		{"not a CSR", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = certPEM(t) },
			&errtest.Want{Field: "spec.request", Type: field.ErrorTypeInvalid, Detail: "PEM block type must be CERTIFICATE REQUEST"}},
		{"bad signature", badSignature, &errtest.Want{Field: "spec.request", Type: field.ErrorTypeInvalid, Detail: "verification"}},
		{"no usages", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = nil },
			&errtest.Want{Field: "spec.usages", Type: field.ErrorTypeRequired, Detail: "usages must be provided"}},
		{"unknown usage", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = append(c.Spec.Usages, "flying") },
			&errtest.Want{Field: "spec.usages[2]", Type: field.ErrorTypeNotSupported, Detail: `"client auth"`}},
		{"duplicate usage", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = append(c.Spec.Usages, certificatesv1.UsageClientAuth)
		},
			&errtest.Want{Field: "spec.usages[2]", Type: field.ErrorTypeDuplicate}},
		{"no signer", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "" },
			&errtest.Want{Field: "spec.signerName", Type: field.ErrorTypeRequired, Detail: "signerName must be provided"}},
		{"signer without path", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example.com" },
			&errtest.Want{Field: "spec.signerName", Type: field.ErrorTypeInvalid, Detail: "must be a fully qualified domain and path of the form 'example.com/signer-name'"}},
		{"signer on a bare host", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example/signer" },
			&errtest.Want{Field: "spec.signerName", Type: field.ErrorTypeInvalid, Detail: "should be a domain with at least two segments separated by dots"}},
		{"signer path not a subdomain", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example.com/Signer" },
			&errtest.Want{Field: "spec.signerName", Type: field.ErrorTypeInvalid, Detail: `validating label "Signer"`}},
		{"legacy signer", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = LegacyUnknownSignerName },
			&errtest.Want{Field: "spec.signerName", Type: field.ErrorTypeInvalid, Detail: "the legacy signerName is not allowed via this API version"}},
		{"short expiration", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = ptr.To[int32](599) },
			&errtest.Want{Field: "spec.expirationSeconds", Type: field.ErrorTypeInvalid, Detail: "may not specify a duration less than 600 seconds (10 minutes)"}},
		{"ten minutes", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = ptr.To[int32](600) }, nil},
		{"approved false", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, corev1.ConditionFalse)}
		}, &errtest.Want{Field: "status.conditions[0].status", Type: field.ErrorTypeNotSupported, Detail: `"True"`}},
		{"approved and denied", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, corev1.ConditionTrue), cond(certificatesv1.CertificateDenied, corev1.ConditionTrue)}
		}, &errtest.Want{Field: "status.conditions[1].type", Type: field.ErrorTypeInvalid, Detail: "Approved and Denied conditions are mutually exclusive"}},
		{"duplicate condition", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateFailed, corev1.ConditionTrue), cond(certificatesv1.CertificateFailed, corev1.ConditionTrue)}
		}, &errtest.Want{Field: "status.conditions[1].type", Type: field.ErrorTypeDuplicate}},
		{"condition without status", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond("Custom", "")}
		}, &errtest.Want{Field: "status.conditions[0].status", Type: field.ErrorTypeRequired}},
		{"certificate of another block type", func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = csrPEM(t, "x") },
			&errtest.Want{Field: "status.certificate", Type: field.ErrorTypeInvalid, Detail: `only CERTIFICATE PEM blocks are allowed, found "CERTIFICATE REQUEST"`}},
		{"certificate not PEM", func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = []byte("hello") },
			&errtest.Want{Field: "status.certificate", Type: field.ErrorTypeInvalid, Detail: "must contain at least one CERTIFICATE PEM block"}},
		{"certificate", func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = certPEM(t) }, nil},
	}
	r, _ := resource(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCSR(t)
			if tt.mod != nil {
				tt.mod(c)
			}
			errtest.Check(t, r.Strategy.Validate(context.Background(), c), tt.want)
		})
	}
}

func TestCreateRecordsRequestor(t *testing.T) {
	r, _ := resource(t)
	c := newCSR(t, func(c *certificatesv1.CertificateSigningRequest) {
		c.Spec.Username, c.Spec.Groups = "someone-else", []string{"system:masters"}
		c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, corev1.ConditionTrue)}
		c.Status.Certificate = []byte("x")
	})
	ctx := request.WithUser(context.Background(), &request.UserInfo{
		Name: "system:bootstrap:abcdef", UID: "u1", Groups: []string{"system:bootstrappers", "system:authenticated"},
		Extra: map[string][]string{"scope": {"join"}},
	})
	r.Strategy.PrepareForCreate(ctx, c)
	if c.Spec.Username != "system:bootstrap:abcdef" || c.Spec.UID != "u1" || len(c.Spec.Groups) != 2 || c.Spec.Groups[0] != "system:bootstrappers" || c.Spec.Extra["scope"][0] != "join" {
		t.Fatalf("requestor = %q %q %v %v", c.Spec.Username, c.Spec.UID, c.Spec.Groups, c.Spec.Extra)
	}
	if len(c.Status.Conditions) != 0 || len(c.Status.Certificate) != 0 {
		t.Fatalf("status not cleared: %+v", c.Status)
	}
	anonymous := newCSR(t, func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Username = "forged" })
	r.Strategy.PrepareForCreate(context.Background(), anonymous)
	if anonymous.Spec.Username != "" {
		t.Fatalf("username without a user = %q", anonymous.Spec.Username)
	}
}

func TestMainUpdateKeepsSpecAndStatus(t *testing.T) {
	r, _ := resource(t)
	old := newCSR(t, func(c *certificatesv1.CertificateSigningRequest) {
		c.ResourceVersion = "5"
		c.Spec.Username = "alice"
	})
	next := old.DeepCopy()
	next.Labels = map[string]string{"a": "b"}
	next.Spec.SignerName = "example.com/other"
	next.Spec.Username = "mallory"
	next.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, corev1.ConditionTrue)}
	r.Strategy.PrepareForUpdate(context.Background(), next, old)
	if next.Spec.SignerName != old.Spec.SignerName || next.Spec.Username != "alice" || len(next.Status.Conditions) != 0 || next.Labels["a"] != "b" {
		t.Fatalf("update changed spec or status: %+v", next)
	}
	errtest.Check(t, r.Strategy.ValidateUpdate(context.Background(), next, old), nil)
}

func TestStatusUpdate(t *testing.T) {
	approved := cond(certificatesv1.CertificateApproved, corev1.ConditionTrue)
	failed := cond(certificatesv1.CertificateFailed, corev1.ConditionTrue)
	issued := certPEM(t)
	tests := []struct {
		name      string
		old, next func(*certificatesv1.CertificateSigningRequest)
		want      *errtest.Want
	}{
		{"issue", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approved}
		}, func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = issued }, nil},
		{"fail", nil, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = append(c.Status.Conditions, failed)
		}, nil},
		{"approve through status", nil, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = append(c.Status.Conditions, approved)
		}, &errtest.Want{Field: "status.conditions", Type: field.ErrorTypeForbidden, Detail: `updates may not add a condition of type "Approved"`}},
		{"remove failed", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{failed}
		}, func(c *certificatesv1.CertificateSigningRequest) { c.Status.Conditions = nil },
			&errtest.Want{Field: "status.conditions", Type: field.ErrorTypeForbidden, Detail: `updates may not remove a condition of type "Failed"`}},
		{"replace certificate", func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = issued },
			func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = certPEM(t) },
			&errtest.Want{Field: "status.certificate", Type: field.ErrorTypeForbidden, Detail: "updates may not modify existing certificate content"}},
	}
	r, _ := resource(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := newCSR(t, func(c *certificatesv1.CertificateSigningRequest) { c.ResourceVersion = "3" })
			if tt.old != nil {
				tt.old(old)
			}
			next := old.DeepCopy()
			tt.next(next)
			next.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageServerAuth}
			r.Status.PrepareForUpdate(context.Background(), next, old)
			if len(next.Spec.Usages) != 2 {
				t.Fatalf("/status changed the spec: %v", next.Spec.Usages)
			}
			errtest.Check(t, r.Status.ValidateUpdate(context.Background(), next, old), tt.want)
		})
	}
}

func TestApprovalUpdate(t *testing.T) {
	r, clk := resource(t)
	old := newCSR(t, func(c *certificatesv1.CertificateSigningRequest) {
		c.ResourceVersion = "3"
		c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: "Custom", Status: corev1.ConditionFalse}}
	})
	clk.Step(time.Minute)
	next := old.DeepCopy()
	// Conditions other than Approved and Denied are the caller's to add, as upstream's /approval
	// (the conformance spec patches an "ApprovalPatch" condition in through it).
	next.Status.Conditions = append(next.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: "ApprovalPatch", Status: corev1.ConditionTrue, Reason: "e2e"},
		cond(certificatesv1.CertificateApproved, corev1.ConditionTrue))
	next.Status.Certificate = certPEM(t)
	r.Subresources["approval"].Strategy.PrepareForUpdate(context.Background(), next, old)
	if len(next.Status.Certificate) != 0 {
		t.Fatal("/approval set the certificate")
	}
	if len(next.Status.Conditions) != 3 || next.Status.Conditions[0].Type != "Custom" || next.Status.Conditions[1].Type != "ApprovalPatch" ||
		next.Status.Conditions[2].Type != certificatesv1.CertificateApproved {
		t.Fatalf("conditions = %+v", next.Status.Conditions)
	}
	if got := next.Status.Conditions[2]; !got.LastUpdateTime.Time.Equal(epoch.Add(time.Minute)) || !got.LastTransitionTime.Time.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("times not stamped: %+v", got)
	}
	errtest.Check(t, r.Subresources["approval"].Strategy.ValidateUpdate(context.Background(), next, old), nil)

	// Denying what was approved both adds a Denied and removes (or contradicts) the Approved.
	deny := next.DeepCopy()
	deny.Status.Conditions = append(deny.Status.Conditions, cond(certificatesv1.CertificateDenied, corev1.ConditionTrue))
	r.Subresources["approval"].Strategy.PrepareForUpdate(context.Background(), deny, next)
	errtest.Check(t, r.Subresources["approval"].Strategy.ValidateUpdate(context.Background(), deny, next), &errtest.Want{Field: "status.conditions[3].type", Type: field.ErrorTypeInvalid, Detail: "Approved and Denied conditions are mutually exclusive"})
	replace := next.DeepCopy()
	replace.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateDenied, corev1.ConditionTrue)}
	r.Subresources["approval"].Strategy.PrepareForUpdate(context.Background(), replace, next)
	errtest.Check(t, r.Subresources["approval"].Strategy.ValidateUpdate(context.Background(), replace, next), &errtest.Want{Field: "status.conditions", Type: field.ErrorTypeForbidden, Detail: `updates may not remove a condition of type "Approved"`})
}

func TestResource(t *testing.T) {
	r := Resources()[0]
	if r.Namespaced || r.Plural != "certificatesigningrequests" || r.ShortNames[0] != "csr" || r.Status == nil || r.Subresources["approval"] == nil {
		t.Fatalf("resource = %+v", r)
	}
	if err := RegisterDefaults(runtime.NewScheme()); err != nil {
		t.Fatal(err)
	}
}

// TestSelectableBySigner: CSRs answer the spec.signerName field selector, as Kubernetes'.
func TestSelectableBySigner(t *testing.T) {
	res := Resources()[0]
	csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: "example.com/signer"}}
	if got := res.SelectableFields(csr)["spec.signerName"]; got != "example.com/signer" {
		t.Fatalf("spec.signerName = %q", got)
	}
}
