package ctrlutil

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// HasTrueCondition reports whether csr has a condition of type t with status True.
func HasTrueCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t && (c.Status == corev1.ConditionTrue || c.Status == "") {
			return true
		}
	}
	return false
}

// CSRApprovedOrDenied reports the approval decision on csr, if any.
func CSRApprovedOrDenied(csr *certificatesv1.CertificateSigningRequest) (approved, denied bool) {
	return HasTrueCondition(csr, certificatesv1.CertificateApproved), HasTrueCondition(csr, certificatesv1.CertificateDenied)
}

// ParseCSR decodes a CertificateSigningRequest's PEM "CERTIFICATE REQUEST" and checks its signature.
func ParseCSR(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse certificate request: %w", err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("certificate request signature: %w", err)
	}
	return req, nil
}

// Kubelet client and serving certificates need exactly these usages, with or without key
// encipherment (which only RSA keys use).
func kubeletUsages(extended certificatesv1.KeyUsage) (withRSA, withoutRSA sets.Set[certificatesv1.KeyUsage]) {
	return sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, extended),
		sets.New(certificatesv1.UsageDigitalSignature, extended)
}

// HasKubeletClientUsages reports whether usages are exactly a kubelet client certificate's:
// client auth and digital signature, with key encipherment or without.
func HasKubeletClientUsages(usages []certificatesv1.KeyUsage) bool {
	withRSA, withoutRSA := kubeletUsages(certificatesv1.UsageClientAuth)
	got := sets.New(usages...)
	return got.Equal(withRSA) || got.Equal(withoutRSA)
}

// HasSubjectAltNames reports whether req names any DNS name, email address, IP or URI.
func HasSubjectAltNames(req *x509.CertificateRequest) bool {
	return len(req.DNSNames) > 0 || len(req.EmailAddresses) > 0 || len(req.IPAddresses) > 0 || len(req.URIs) > 0
}

// NodeUserPrefix begins every node's user name (and its certificates' common name).
const NodeUserPrefix = "system:node:"

// ValidateKubeletClientCSR applies Kubernetes' rules for kubernetes.io/kube-apiserver-client-kubelet:
// organization exactly system:nodes, no subject alternative names, a system:node:<name> common
// name, and the client usages.
func ValidateKubeletClientCSR(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return errors.New("subject organization is not system:nodes")
	}
	if len(req.DNSNames) > 0 {
		return errors.New("DNS subjectAltNames are not allowed")
	}
	if len(req.EmailAddresses) > 0 {
		//lint:ignore ST1005 Kubernetes' wording, which kubectl users see in the Failed condition
		return errors.New("Email subjectAltNames are not allowed")
	}
	if len(req.IPAddresses) > 0 {
		return errors.New("IP subjectAltNames are not allowed")
	}
	if len(req.URIs) > 0 {
		return errors.New("URI subjectAltNames are not allowed")
	}
	if !strings.HasPrefix(req.Subject.CommonName, NodeUserPrefix) {
		//lint:ignore ST1005 Kubernetes' wording, which kubectl users see in the Failed condition
		return errors.New("subject common name does not begin with system:node:")
	}
	withRSA, withoutRSA := kubeletUsages(certificatesv1.UsageClientAuth)
	if got := sets.New(usages...); !got.Equal(withRSA) && !got.Equal(withoutRSA) {
		return fmt.Errorf("usages did not match %v", sets.List(withRSA))
	}
	return nil
}

// ValidateKubeletServingCSR applies Kubernetes' rules for kubernetes.io/kubelet-serving:
// organization exactly system:nodes, at least one DNS or IP name and no other kind, the server
// usages and a system:node:<name> common name.
func ValidateKubeletServingCSR(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return errors.New("subject organization is not system:nodes")
	}
	if len(req.DNSNames) == 0 && len(req.IPAddresses) == 0 {
		return errors.New("DNS or IP subjectAltName is required")
	}
	if len(req.EmailAddresses) > 0 {
		//lint:ignore ST1005 Kubernetes' wording, which kubectl users see in the Failed condition
		return errors.New("Email subjectAltNames are not allowed")
	}
	if len(req.URIs) > 0 {
		return errors.New("URI subjectAltNames are not allowed")
	}
	withRSA, withoutRSA := kubeletUsages(certificatesv1.UsageServerAuth)
	if got := sets.New(usages...); !got.Equal(withRSA) && !got.Equal(withoutRSA) {
		return fmt.Errorf("usages did not match %v", sets.List(withRSA))
	}
	if !strings.HasPrefix(req.Subject.CommonName, NodeUserPrefix) {
		//lint:ignore ST1005 Kubernetes' wording, which kubectl users see in the Failed condition
		return errors.New("subject common name does not begin with system:node:")
	}
	return nil
}

// ValidateAPIServerClientUsages applies kubernetes.io/kube-apiserver-client's rule: client auth is
// required, digital signature and key encipherment are allowed, nothing else.
func ValidateAPIServerClientUsages(usages []certificatesv1.KeyUsage) error {
	hasClientAuth := false
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		case certificatesv1.UsageClientAuth:
			hasClientAuth = true
		default:
			return fmt.Errorf("invalid usage for client certificate: %s", u)
		}
	}
	if !hasClientAuth {
		return fmt.Errorf("missing required usage for client certificate: %s", certificatesv1.UsageClientAuth)
	}
	return nil
}
