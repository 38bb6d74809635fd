package csrcleaner

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	goruntime "runtime"
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

func certValidUntil(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: notAfter.Add(-48 * time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestSweep(t *testing.T) {
	now := ctrltest.Epoch()
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	csr := func(name string, created time.Duration, cert []byte, conds ...certificatesv1.CertificateSigningRequestCondition) *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), CreationTimestamp: ago(created)},
			Status:     certificatesv1.CertificateSigningRequestStatus{Conditions: conds, Certificate: cert},
		}
	}
	cond := func(t certificatesv1.RequestConditionType, updated time.Duration) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue, LastUpdateTime: ago(updated)}
	}
	valid := certValidUntil(t, now.Add(24*time.Hour))
	expired := certValidUntil(t, now.Add(-time.Minute))
	objs := []runtime.Object{
		csr("pending-young", 23*time.Hour, nil),
		csr("pending-old", 25*time.Hour, nil),
		csr("issued-young", 2*time.Hour, valid, cond(certificatesv1.CertificateApproved, 30*time.Minute)),
		csr("issued-old", 2*time.Hour, valid, cond(certificatesv1.CertificateApproved, 61*time.Minute)),
		csr("approved-unissued", 2*time.Hour, nil, cond(certificatesv1.CertificateApproved, 61*time.Minute)),
		csr("denied-young", 2*time.Hour, nil, cond(certificatesv1.CertificateDenied, 59*time.Minute)),
		csr("denied-old", 2*time.Hour, nil, cond(certificatesv1.CertificateDenied, 61*time.Minute)),
		csr("failed-old", 2*time.Hour, nil, cond(certificatesv1.CertificateApproved, time.Minute), cond(certificatesv1.CertificateFailed, 61*time.Minute)),
		csr("issued-expired", 2*time.Hour, expired, cond(certificatesv1.CertificateApproved, time.Minute)),
	}
	env := ctrltest.NewEnv(objs...)
	c := New(env.Deps, Config{})
	ctrltest.Seed(t, env.Factory.Certificates().V1().CertificateSigningRequests().Informer(), objs...)
	if err := c.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := ctrltest.Describe(env.Writes())
	slices.Sort(got)
	want := []string{
		"delete certificatesigningrequests denied-old",
		"delete certificatesigningrequests failed-old",
		"delete certificatesigningrequests issued-expired",
		"delete certificatesigningrequests issued-old",
		"delete certificatesigningrequests pending-old",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("actions\n%q\nwant\n%q", got, want)
	}
}

// TestRunSweepsHourly drives Run with the fake clock: a sweep at start, the next an hour later.
func TestRunSweepsHourly(t *testing.T) {
	now := ctrltest.Epoch()
	young := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "pending", UID: "u", CreationTimestamp: metav1.NewTime(now.Add(-23*time.Hour - 30*time.Minute))}}
	env := ctrltest.NewEnv(young)
	c := New(env.Deps, Config{})
	ctrltest.Seed(t, env.Factory.Certificates().V1().CertificateSigningRequests().Informer(), young)
	c.synced = func() bool { return true }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx, 1); close(done) }()
	defer func() { cancel(); <-done }()
	// Run starts its ticker after the first sweep.
	for !env.Clock.HasWaiters() {
		goruntime.Gosched()
	}
	if got := env.Writes(); len(got) != 0 {
		t.Fatalf("first sweep deleted %q", ctrltest.Describe(got))
	}
	env.Clock.Step(time.Hour)
	for {
		if writes := env.Client.Actions(); len(writes) > 0 && slices.ContainsFunc(writes, func(a clienttesting.Action) bool { return a.GetVerb() == "delete" }) {
			break
		}
		goruntime.Gosched()
	}
}
