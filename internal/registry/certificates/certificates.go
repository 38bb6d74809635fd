package certificates

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
	"github.com/skiff-sh/skiff/internal/request"
)

// LegacyUnknownSignerName is the v1beta1-only signer; certificates.k8s.io/v1 refuses new requests
// for it (the constant lives in k8s.io/api/certificates/v1beta1, which skiff does not serve).
const LegacyUnknownSignerName = "kubernetes.io/legacy-unknown"

// Resources returns the certificates.k8s.io/v1 resources, stamping condition times with the real clock.
func Resources() []*registry.Resource { return NewResources(clock.RealClock{}) }

// NewResources returns the certificates.k8s.io/v1 resources; clk stamps the conditions'
// lastUpdateTime and lastTransitionTime when a client leaves them unset.
func NewResources(clk clock.PassiveClock) []*registry.Resource {
	apiVersion := certificatesv1.SchemeGroupVersion.String()
	return []*registry.Resource{{
		GroupVersion: certificatesv1.SchemeGroupVersion, Kind: "CertificateSigningRequest", ListKind: "CertificateSigningRequestList",
		Plural: "certificatesigningrequests", Singular: "certificatesigningrequest", ShortNames: []string{"csr"},
		New:     func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} },
		NewList: func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} },
		// As Kubernetes: CSRs can be selected by signer (conformance's CSR API spec lists them so).
		SelectableFields: func(obj runtime.Object) fields.Set {
			c, ok := obj.(*certificatesv1.CertificateSigningRequest)
			if !ok {
				return nil
			}
			return fields.Set{"spec.signerName": c.Spec.SignerName}
		},
		Strategy: &vu.Strategy[*certificatesv1.CertificateSigningRequest]{
			APIVersion: apiVersion,
			// Kubernetes does not care what CSRs are called beyond metadata's own rules.
			NameFn: func(string, bool) []string { return nil },
			ClearStatus: func(c *certificatesv1.CertificateSigningRequest) {
				c.Status = certificatesv1.CertificateSigningRequestStatus{}
			},
			KeepStatus: func(c, old *certificatesv1.CertificateSigningRequest) { c.Status = old.Status },
			OnCreate:   setRequestor,
			// The spec is what was asked for and by whom: an update of the main resource changes
			// only metadata, as in Kubernetes (the spec is carried over, not refused).
			OnUpdate: func(_ context.Context, c, old *certificatesv1.CertificateSigningRequest) { c.Spec = old.Spec },
			ValidateObject: func(c *certificatesv1.CertificateSigningRequest) field.ErrorList {
				return ValidateCertificateSigningRequest(c)
			},
			ValidateUpdateObject: func(c, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
				return validateUpdateContent(c, old, options(old))
			},
			UnconditionalUpdate: true,
		},
		Status: &vu.StatusStrategy[*certificatesv1.CertificateSigningRequest]{
			APIVersion: apiVersion,
			KeepSpec: func(c, old *certificatesv1.CertificateSigningRequest) {
				c.Spec = old.Spec
				populateConditionTimestamps(c, old, clk)
				// After the stamping, so an unchanged approval keeps exactly its stored instance.
				preserveConditionInstances(c, old, certificatesv1.CertificateApproved, certificatesv1.CertificateDenied)
			},
			ValidateStatus: func(c, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
				opts := options(old)
				opts.allowSettingCertificate = true
				return validateUpdateContent(c, old, opts)
			},
		},
		// /approval: kubectl certificate approve|deny and the csrapproving controller.
		Subresources: map[string]*registry.Subresource{"approval": {Strategy: &vu.StatusStrategy[*certificatesv1.CertificateSigningRequest]{
			APIVersion: apiVersion,
			KeepSpec: func(c, old *certificatesv1.CertificateSigningRequest) {
				c.Spec = old.Spec
				// Only the conditions change, all of them as written: upstream's /approval
				// takes the whole list (validation still guards Approved and Denied).
				c.Status.Certificate = old.Status.Certificate
				populateConditionTimestamps(c, old, clk)
			},
			ValidateStatus: func(c, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
				opts := options(old)
				opts.allowSettingApprovalConditions = true
				return validateUpdateContent(c, old, opts)
			},
		}}},
	}}
}

// RegisterDefaults exists for symmetry with the other groups: CSRs have no defaults in v1 (the
// signerName is required).
func RegisterDefaults(s *runtime.Scheme) error {
	if s == nil {
		return fmt.Errorf("register certificates.k8s.io/v1 defaults: nil scheme")
	}
	return nil
}

// setRequestor records who asked: the authenticated user of the request, never what the client wrote.
func setRequestor(ctx context.Context, c *certificatesv1.CertificateSigningRequest) {
	c.Spec.Username, c.Spec.UID, c.Spec.Groups, c.Spec.Extra = "", "", nil, nil
	user, ok := request.UserFrom(ctx)
	if !ok {
		return
	}
	c.Spec.Username, c.Spec.UID = user.Name, user.UID
	if len(user.Groups) > 0 {
		c.Spec.Groups = append([]string(nil), user.Groups...)
	}
	if len(user.Extra) > 0 {
		c.Spec.Extra = make(map[string]certificatesv1.ExtraValue, len(user.Extra))
		for k, v := range user.Extra {
			c.Spec.Extra[k] = append(certificatesv1.ExtraValue(nil), v...)
		}
	}
}

// preserveConditionInstances keeps the stored instances of the given condition types where the
// update has as many of them, so that /status cannot rewrite an approval's reason or times. Added or
// removed instances are left for validation to refuse.
func preserveConditionInstances(c, old *certificatesv1.CertificateSigningRequest, types ...certificatesv1.RequestConditionType) {
	for _, t := range types {
		oldIdx, newIdx := conditionIndexes(old, t), conditionIndexes(c, t)
		if len(oldIdx) != len(newIdx) {
			continue
		}
		for i := range newIdx {
			c.Status.Conditions[newIdx[i]] = old.Status.Conditions[oldIdx[i]]
		}
	}
}

// populateConditionTimestamps fills unset condition times as Kubernetes does: lastUpdateTime is now;
// lastTransitionTime is the stored one while the condition keeps its status, else now.
func populateConditionTimestamps(c, old *certificatesv1.CertificateSigningRequest, clk clock.PassiveClock) {
	now := metav1.NewTime(clk.Now().Truncate(1e9))
	for i := range c.Status.Conditions {
		cond := &c.Status.Conditions[i]
		if cond.LastUpdateTime.IsZero() {
			cond.LastUpdateTime = now
		}
		if !cond.LastTransitionTime.IsZero() {
			continue
		}
		cond.LastTransitionTime = now
		for _, prev := range old.Status.Conditions {
			if prev.Type == cond.Type && prev.Status == cond.Status && !prev.LastTransitionTime.IsZero() {
				cond.LastTransitionTime = prev.LastTransitionTime
				break
			}
		}
	}
}

func conditionIndexes(c *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []int {
	var out []int
	for i, cond := range c.Status.Conditions {
		if cond.Type == t {
			out = append(out, i)
		}
	}
	return out
}

func findConditions(c *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, i := range conditionIndexes(c, t) {
		out = append(out, c.Status.Conditions[i])
	}
	return out
}

// validationOptions are the changes only some update paths may make, and the problems tolerated
// when the stored object already has them (Kubernetes' compatibility rule: an update never fails on
// what it did not introduce).
type validationOptions struct {
	allowSettingApprovalConditions bool
	allowSettingCertificate        bool
	allowBothApprovedAndDenied     bool
	allowDuplicateConditionTypes   bool
	allowLegacySignerName          bool
}

func options(old *certificatesv1.CertificateSigningRequest) validationOptions {
	var opts validationOptions
	if old == nil {
		return opts
	}
	opts.allowBothApprovedAndDenied = len(findConditions(old, certificatesv1.CertificateApproved)) > 0 && len(findConditions(old, certificatesv1.CertificateDenied)) > 0
	seen := map[certificatesv1.RequestConditionType]bool{}
	for _, c := range old.Status.Conditions {
		if seen[c.Type] {
			opts.allowDuplicateConditionTypes = true
		}
		seen[c.Type] = true
	}
	opts.allowLegacySignerName = old.Spec.SignerName == LegacyUnknownSignerName
	return opts
}

// allUsages is the set of key usages Kubernetes accepts.
var allUsages = []certificatesv1.KeyUsage{
	certificatesv1.UsageSigning, certificatesv1.UsageDigitalSignature, certificatesv1.UsageContentCommitment,
	certificatesv1.UsageKeyEncipherment, certificatesv1.UsageKeyAgreement, certificatesv1.UsageDataEncipherment,
	certificatesv1.UsageCertSign, certificatesv1.UsageCRLSign, certificatesv1.UsageEncipherOnly,
	certificatesv1.UsageDecipherOnly, certificatesv1.UsageAny, certificatesv1.UsageServerAuth,
	certificatesv1.UsageClientAuth, certificatesv1.UsageCodeSigning, certificatesv1.UsageEmailProtection,
	certificatesv1.UsageSMIME, certificatesv1.UsageIPsecEndSystem, certificatesv1.UsageIPsecTunnel,
	certificatesv1.UsageIPsecUser, certificatesv1.UsageTimestamping, certificatesv1.UsageOCSPSigning,
	certificatesv1.UsageMicrosoftSGC, certificatesv1.UsageNetscapeSGC,
}

// ValidateCertificateSigningRequest checks a new request's own fields (metadata is the strategy's):
// the PKCS#10 request and its signature, usages, signer name, expiration, conditions and certificate.
func ValidateCertificateSigningRequest(c *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return validateFields(c, options(nil))
}

func validateFields(c *certificatesv1.CertificateSigningRequest, opts validationOptions) field.ErrorList {
	var errs field.ErrorList
	specPath := field.NewPath("spec")
	if _, err := ParseCSR(c.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(specPath.Child("request"), c.Spec.Request, err.Error()))
	}
	if len(c.Spec.Usages) == 0 {
		errs = append(errs, field.Required(specPath.Child("usages"), "usages must be provided"))
	}
	known := sets.New(allUsages...)
	seen := map[certificatesv1.KeyUsage]bool{}
	for i, u := range c.Spec.Usages {
		if !known.Has(u) {
			errs = append(errs, field.NotSupported(specPath.Child("usages").Index(i), u, sets.List(known)))
		}
		if seen[u] {
			errs = append(errs, field.Duplicate(specPath.Child("usages").Index(i), u))
		}
		seen[u] = true
	}
	if !opts.allowLegacySignerName && c.Spec.SignerName == LegacyUnknownSignerName {
		errs = append(errs, field.Invalid(specPath.Child("signerName"), c.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		errs = append(errs, ValidateSignerName(specPath.Child("signerName"), c.Spec.SignerName)...)
	}
	if c.Spec.ExpirationSeconds != nil && *c.Spec.ExpirationSeconds < 600 {
		errs = append(errs, field.Invalid(specPath.Child("expirationSeconds"), *c.Spec.ExpirationSeconds, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	errs = append(errs, validateConditions(field.NewPath("status", "conditions"), c, opts)...)
	if err := validateCertificate(c.Status.Certificate); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", err.Error()))
	}
	return errs
}

// validateUpdateContent is every update path's check, the options saying which path it is: the main
// resource may change neither the approval conditions nor the certificate, /status not the approval
// conditions, /approval not the certificate; nobody removes a decision or replaces a certificate.
func validateUpdateContent(c, old *certificatesv1.CertificateSigningRequest, opts validationOptions) field.ErrorList {
	errs := validateFields(c, opts)
	condPath := field.NewPath("status", "conditions")
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		if len(findConditions(c, t)) < len(findConditions(old, t)) {
			errs = append(errs, field.Forbidden(condPath, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	if !opts.allowSettingApprovalConditions {
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
			oldConds, newConds := findConditions(old, t), findConditions(c, t)
			switch {
			case len(newConds) < len(oldConds):
				// refused above
			case len(newConds) > len(oldConds):
				errs = append(errs, field.Forbidden(condPath, fmt.Sprintf("updates may not add a condition of type %q", t)))
			case !apiequality.Semantic.DeepEqual(oldConds, newConds):
				errs = append(errs, field.Forbidden(condPath, fmt.Sprintf("updates may not modify a condition of type %q", t)))
			}
		}
	}
	if !bytes.Equal(c.Status.Certificate, old.Status.Certificate) {
		certPath := field.NewPath("status", "certificate")
		switch {
		case !opts.allowSettingCertificate:
			errs = append(errs, field.Forbidden(certPath, "updates may not set certificate content"))
		case len(old.Status.Certificate) > 0:
			errs = append(errs, field.Forbidden(certPath, "updates may not modify existing certificate content"))
		}
	}
	return errs
}

func validateConditions(fldPath *field.Path, c *certificatesv1.CertificateSigningRequest, opts validationOptions) field.ErrorList {
	var errs field.ErrorList
	seen := map[certificatesv1.RequestConditionType]bool{}
	hasApproved, hasDenied := false, false
	for i, cond := range c.Status.Conditions {
		p := fldPath.Index(i)
		if cond.Type == "" {
			errs = append(errs, field.Required(p.Child("type"), ""))
		}
		allowed := []string{string(corev1.ConditionFalse), string(corev1.ConditionTrue), string(corev1.ConditionUnknown)}
		switch cond.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			// These conditions record a decision or an outcome: they exist only as True.
			allowed = []string{string(corev1.ConditionTrue)}
		}
		switch {
		case cond.Status == "":
			errs = append(errs, field.Required(p.Child("status"), ""))
		case !sets.New(allowed...).Has(string(cond.Status)):
			errs = append(errs, field.NotSupported(p.Child("status"), cond.Status, allowed))
		}
		if !opts.allowBothApprovedAndDenied {
			switch cond.Type {
			case certificatesv1.CertificateApproved:
				hasApproved = true
				if hasDenied {
					errs = append(errs, field.Invalid(p.Child("type"), cond.Type, "Approved and Denied conditions are mutually exclusive"))
				}
			case certificatesv1.CertificateDenied:
				hasDenied = true
				if hasApproved {
					errs = append(errs, field.Invalid(p.Child("type"), cond.Type, "Approved and Denied conditions are mutually exclusive"))
				}
			}
		}
		if !opts.allowDuplicateConditionTypes && seen[cond.Type] {
			errs = append(errs, field.Duplicate(p.Child("type"), cond.Type))
		}
		seen[cond.Type] = true
	}
	return errs
}

// ValidateSignerName checks that a signer name is "<domain>/<path>": a domain of at least two DNS
// labels and a path of DNS subdomains separated by dots, 571 characters at most (room for
// "<fqdn>/<namespace>.<name>").
func ValidateSignerName(fldPath *field.Path, signerName string) field.ErrorList {
	if signerName == "" {
		return field.ErrorList{field.Required(fldPath, "signerName must be provided")}
	}
	segments := strings.Split(signerName, "/")
	if len(segments) != 2 {
		return field.ErrorList{field.Invalid(fldPath, signerName, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	domain, path := segments[0], segments[1]
	if len(domain) > utilvalidation.DNS1123SubdomainMaxLength {
		errs = append(errs, field.TooLong(fldPath, domain, utilvalidation.DNS1123SubdomainMaxLength))
	}
	labels := strings.Split(domain, ".")
	for _, l := range labels {
		if msgs := utilvalidation.IsDNS1123Label(l); len(msgs) > 0 {
			for _, m := range msgs {
				errs = append(errs, field.Invalid(fldPath, domain, fmt.Sprintf("validating label %q: %s", l, m)))
			}
			// Later labels would only repeat the same complaint.
			break
		}
	}
	if len(labels) < 2 {
		errs = append(errs, field.Invalid(fldPath, domain, "should be a domain with at least two segments separated by dots"))
	}
	for _, l := range strings.Split(path, ".") {
		if msgs := utilvalidation.IsDNS1123Subdomain(l); len(msgs) > 0 {
			for _, m := range msgs {
				errs = append(errs, field.Invalid(fldPath, path, fmt.Sprintf("validating label %q: %s", l, m)))
			}
			break
		}
	}
	maxLen := utilvalidation.DNS1123SubdomainMaxLength + (utilvalidation.DNS1123SubdomainMaxLength + utilvalidation.DNS1123LabelMaxLength + 1) + 1
	if len(signerName) > maxLen {
		errs = append(errs, field.TooLong(fldPath, signerName, maxLen))
	}
	return errs
}

// ParseCSR decodes a PEM "CERTIFICATE REQUEST" block and checks its signature: a request whose
// signature does not verify was not made by the holder of the key it names.
func ParseCSR(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, err
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, err
	}
	return csr, nil
}

// validateCertificate accepts an empty certificate or only well-formed CERTIFICATE PEM blocks.
func validateCertificate(pemData []byte) error {
	if len(pemData) == 0 {
		return nil
	}
	blocks := 0
	for {
		block, rest := pem.Decode(pemData)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) != 0 {
			return errors.New("no PEM block headers are permitted")
		}
		blocks++
		certs, err := x509.ParseCertificates(block.Bytes)
		if err != nil {
			return err
		}
		if len(certs) == 0 {
			return errors.New("found CERTIFICATE PEM block containing 0 certificates")
		}
		pemData = rest
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}
