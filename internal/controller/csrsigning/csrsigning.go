package csrsigning

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certificateslisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
	"github.com/skiff-sh/skiff/internal/pki"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "csrsigning"

const (
	// DefaultDuration is kube-controller-manager's --cluster-signing-duration default.
	DefaultDuration = 365 * 24 * time.Hour
	// backdate makes a fresh certificate valid on nodes whose clocks run a little behind; it must
	// stay below minDuration so no certificate is born expired.
	backdate = 5 * time.Minute
	// minDuration is the shortest certificate issued, whatever spec.expirationSeconds asks for
	// (twice the backdate).
	minDuration = 10 * time.Minute
	// reasonSignerValidationFailure is the Failed condition's reason for a request the signer refuses.
	reasonSignerValidationFailure = "SignerValidationFailure"
)

// Config is what the signer needs besides the common controller dependencies.
type Config struct {
	// CA signs the certificates. Required.
	CA *pki.CA
	// Duration is the longest certificate issued; spec.expirationSeconds may only shorten it.
	// Zero means DefaultDuration.
	Duration time.Duration
	// Logger receives the controller's log lines; nil discards them.
	Logger *slog.Logger
}

// checkFor returns the signer-specific rule of a signer this controller issues for; ok is false
// for every other signer.
func checkFor(signerName string) (check func(*x509.CertificateRequest, []certificatesv1.KeyUsage) error, ok bool) {
	switch signerName {
	case certificatesv1.KubeAPIServerClientSignerName:
		return func(_ *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
			return ctrlutil.ValidateAPIServerClientUsages(usages)
		}, true
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		return ctrlutil.ValidateKubeletClientCSR, true
	case certificatesv1.KubeletServingSignerName:
		return ctrlutil.ValidateKubeletServingCSR, true
	}
	return nil, false
}

// Controller signs approved requests.
type Controller struct {
	client   kubernetes.Interface
	lister   certificateslisters.CertificateSigningRequestLister
	clock    clock.PassiveClock
	ca       *pki.CA
	duration time.Duration
	log      *slog.Logger
	loop     *ctrlutil.Loop
	synced   []cache.InformerSynced
}

// New builds the signer.
func New(deps ctrlutil.Deps, cfg Config) (*Controller, error) {
	if cfg.CA == nil {
		return nil, fmt.Errorf("%s: a signing CA is required", Name)
	}
	if cfg.Duration < 0 {
		return nil, fmt.Errorf("%s: signing duration must not be negative, got %s", Name, cfg.Duration)
	}
	if cfg.Duration == 0 {
		cfg.Duration = DefaultDuration
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	informer := deps.Informers.Certificates().V1().CertificateSigningRequests()
	c := &Controller{
		client: deps.Client, lister: informer.Lister(), clock: deps.Clock,
		ca: cfg.CA, duration: cfg.Duration, log: cfg.Logger,
		synced: []cache.InformerSynced{informer.Informer().HasSynced},
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.loop.Enqueue, UpdateFunc: func(_, o any) { c.loop.Enqueue(o) },
	}); err != nil {
		return nil, fmt.Errorf("csr informer handler: %w", err)
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced...) }

// Sync issues the certificate of the request named key, or marks it Failed, when it is approved,
// not yet issued or failed, and for one of this controller's signers.
func (c *Controller) Sync(ctx context.Context, key string) error {
	csr, err := c.lister.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get csr %s: %w", key, err)
	}
	approved, denied := ctrlutil.CSRApprovedOrDenied(csr)
	if !approved || denied || len(csr.Status.Certificate) > 0 || ctrlutil.HasTrueCondition(csr, certificatesv1.CertificateFailed) {
		return nil
	}
	check, ours := checkFor(csr.Spec.SignerName)
	if !ours {
		return nil
	}
	req, err := ctrlutil.ParseCSR(csr.Spec.Request)
	if err == nil {
		err = check(req, csr.Spec.Usages)
	}
	if err != nil {
		return c.fail(ctx, csr, err)
	}
	certPEM, err := c.ca.SignPublicKey(c.template(req, csr), req.PublicKey)
	if err != nil {
		return fmt.Errorf("sign csr %s: %w", csr.Name, err)
	}
	next := csr.DeepCopy()
	next.Status.Certificate = certPEM
	if _, err := c.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("store the certificate of csr %s: %w", csr.Name, err)
	}
	c.log.Info("issued certificate", "csr", csr.Name, "signer", csr.Spec.SignerName, "subject", req.Subject.String())
	return nil
}

// fail records why the signer will not issue this request; Failed is final.
func (c *Controller) fail(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, cause error) error {
	now := metav1.NewTime(c.clock.Now())
	next := csr.DeepCopy()
	next.Status.Conditions = append(next.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue,
		Reason: reasonSignerValidationFailure, Message: cause.Error(),
		LastUpdateTime: now, LastTransitionTime: now,
	})
	if _, err := c.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("mark csr %s failed: %w", csr.Name, err)
	}
	c.log.Info("refused certificate request", "csr", csr.Name, "signer", csr.Spec.SignerName, "reason", cause.Error())
	return nil
}

// template is the certificate the request asked for: its subject and names, the usages from the
// spec (not the request's extensions, which the requester controls), valid from a little before
// now for the granted duration.
func (c *Controller) template(req *x509.CertificateRequest, csr *certificatesv1.CertificateSigningRequest) *x509.Certificate {
	now := c.clock.Now()
	keyUsage, extKeyUsage := keyUsages(csr.Spec.Usages)
	return &x509.Certificate{
		Subject:        req.Subject,
		DNSNames:       req.DNSNames,
		IPAddresses:    req.IPAddresses,
		EmailAddresses: req.EmailAddresses,
		URIs:           req.URIs,
		NotBefore:      now.Add(-backdate),
		NotAfter:       now.Add(c.grantedDuration(csr.Spec.ExpirationSeconds)),
		KeyUsage:       keyUsage,
		ExtKeyUsage:    extKeyUsage,
	}
}

// grantedDuration honours spec.expirationSeconds within [minDuration, the configured duration].
func (c *Controller) grantedDuration(expirationSeconds *int32) time.Duration {
	if expirationSeconds == nil {
		return c.duration
	}
	requested := time.Duration(*expirationSeconds) * time.Second
	switch {
	case requested > c.duration:
		return c.duration
	case requested < minDuration:
		return minDuration
	}
	return requested
}

// keyUsageOf maps a spec usage onto an X.509 key usage bit (0 for an extended usage).
func keyUsageOf(u certificatesv1.KeyUsage) x509.KeyUsage {
	switch u {
	case certificatesv1.UsageSigning, certificatesv1.UsageDigitalSignature:
		return x509.KeyUsageDigitalSignature
	case certificatesv1.UsageContentCommitment:
		return x509.KeyUsageContentCommitment
	case certificatesv1.UsageKeyEncipherment:
		return x509.KeyUsageKeyEncipherment
	case certificatesv1.UsageKeyAgreement:
		return x509.KeyUsageKeyAgreement
	case certificatesv1.UsageDataEncipherment:
		return x509.KeyUsageDataEncipherment
	case certificatesv1.UsageCertSign:
		return x509.KeyUsageCertSign
	case certificatesv1.UsageCRLSign:
		return x509.KeyUsageCRLSign
	case certificatesv1.UsageEncipherOnly:
		return x509.KeyUsageEncipherOnly
	case certificatesv1.UsageDecipherOnly:
		return x509.KeyUsageDecipherOnly
	}
	return 0
}

// extKeyUsageOf maps a spec usage onto an X.509 extended key usage; ok is false for a key usage bit.
func extKeyUsageOf(u certificatesv1.KeyUsage) (x509.ExtKeyUsage, bool) {
	switch u {
	case certificatesv1.UsageAny:
		return x509.ExtKeyUsageAny, true
	case certificatesv1.UsageServerAuth:
		return x509.ExtKeyUsageServerAuth, true
	case certificatesv1.UsageClientAuth:
		return x509.ExtKeyUsageClientAuth, true
	case certificatesv1.UsageCodeSigning:
		return x509.ExtKeyUsageCodeSigning, true
	case certificatesv1.UsageEmailProtection, certificatesv1.UsageSMIME:
		return x509.ExtKeyUsageEmailProtection, true
	case certificatesv1.UsageIPsecEndSystem:
		return x509.ExtKeyUsageIPSECEndSystem, true
	case certificatesv1.UsageIPsecTunnel:
		return x509.ExtKeyUsageIPSECTunnel, true
	case certificatesv1.UsageIPsecUser:
		return x509.ExtKeyUsageIPSECUser, true
	case certificatesv1.UsageTimestamping:
		return x509.ExtKeyUsageTimeStamping, true
	case certificatesv1.UsageOCSPSigning:
		return x509.ExtKeyUsageOCSPSigning, true
	case certificatesv1.UsageMicrosoftSGC:
		return x509.ExtKeyUsageMicrosoftServerGatedCrypto, true
	case certificatesv1.UsageNetscapeSGC:
		return x509.ExtKeyUsageNetscapeServerGatedCrypto, true
	}
	return 0, false
}

// keyUsages maps the spec's usages onto X.509 key usage bits and extended key usages.
func keyUsages(usages []certificatesv1.KeyUsage) (x509.KeyUsage, []x509.ExtKeyUsage) {
	var ku x509.KeyUsage
	var eku []x509.ExtKeyUsage
	for _, u := range usages {
		ku |= keyUsageOf(u)
		if ext, ok := extKeyUsageOf(u); ok && !slices.Contains(eku, ext) {
			eku = append(eku, ext)
		}
	}
	return ku, eku
}
