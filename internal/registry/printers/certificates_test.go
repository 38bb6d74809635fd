package printers

import (
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// goldenCSRs covers every CONDITION kubectl shows: pending, approved and issued, denied, failed,
// and a request without a requested duration or signer.
func goldenCSRs() []runtime.Object {
	csr := func(name, signer, user string, seconds *int32, cert bool, conds ...certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
		c := &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: ago(5 * time.Minute)},
			Spec:       certificatesv1.CertificateSigningRequestSpec{SignerName: signer, Username: user, ExpirationSeconds: seconds},
		}
		for _, t := range conds {
			c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue})
		}
		if cert {
			c.Status.Certificate = []byte("-----BEGIN CERTIFICATE-----\n")
		}
		return c
	}
	return []runtime.Object{
		csr("node-csr-pending", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:bootstrap:abcdef", nil, false),
		csr("node-csr-issued", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:worker-1", ptr.To[int32](86400), true, certificatesv1.CertificateApproved),
		csr("alice", certificatesv1.KubeAPIServerClientSignerName, "kubernetes-admin", ptr.To[int32](600), false, certificatesv1.CertificateDenied),
		csr("wrong-cn", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:worker-2", nil, false, certificatesv1.CertificateApproved, certificatesv1.CertificateFailed),
		csr("unsigned", "", "", nil, false),
	}
}
