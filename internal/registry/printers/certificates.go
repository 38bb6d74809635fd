package printers

import (
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/skiff-sh/skiff/internal/registry"
)

const groupCertificates = "certificates.k8s.io"

func certificateSigningRequestPrinter() *registry.TablePrinter {
	spec := certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			ageColumn(),
			column("SignerName", columnTypeString, spec["signerName"]),
			column("Requestor", columnTypeString, "Name of the user who requested the CSR."),
			column("RequestedDuration", columnTypeString, spec["expirationSeconds"]),
			column("Condition", columnTypeString, certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]),
		},
		Row: typedRow("certificatesigningrequests", func(c *certificatesv1.CertificateSigningRequest, now time.Time) ([]interface{}, error) {
			signer := c.Spec.SignerName
			if signer == "" {
				signer = noneCell
			}
			requested := noneCell
			if c.Spec.ExpirationSeconds != nil {
				requested = duration.HumanDuration(time.Duration(*c.Spec.ExpirationSeconds) * time.Second)
			}
			return []interface{}{c.Name, age(c.CreationTimestamp, now), signer, c.Spec.Username, requested, csrCondition(c)}, nil
		}),
	}
}

// csrCondition is kubectl's one-word state of a request: the decision (Denied wins over Approved,
// neither is Pending), then ",Failed" and ",Issued" when they apply.
func csrCondition(c *certificatesv1.CertificateSigningRequest) string {
	var approved, denied, failed bool
	for _, cond := range c.Status.Conditions {
		switch cond.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		case certificatesv1.CertificateFailed:
			failed = true
		}
	}
	var out string
	switch {
	case denied:
		out = "Denied"
	case approved:
		out = "Approved"
	default:
		out = "Pending"
	}
	if failed {
		out += ",Failed"
	}
	if len(c.Status.Certificate) > 0 {
		out += ",Issued"
	}
	return out
}
