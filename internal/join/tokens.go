package join

import (
	"context"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// CreateToken stores a new bootstrap token in the cluster and returns the join token to print.
func CreateToken(ctx context.Context, client kubernetes.Interface, ca *x509.Certificate, opts SecretOptions, now time.Time) (JoinToken, error) {
	if len(opts.ExtraGroups) == 0 {
		opts.ExtraGroups = []string{DefaultNodeGroup}
	}
	for range 3 {
		tok, err := NewToken()
		if err != nil {
			return JoinToken{}, err
		}
		secret, err := NewSecret(tok, opts, now)
		if err != nil {
			return JoinToken{}, err
		}
		_, err = client.CoreV1().Secrets(SecretNamespace).Create(ctx, secret, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue // an ID drawn twice: draw again
		}
		if err != nil {
			return JoinToken{}, fmt.Errorf("create token secret: %w", err)
		}
		return JoinToken{CAHash: CAHash(ca), Token: tok}, nil
	}
	return JoinToken{}, fmt.Errorf("create token secret: three IDs drawn were taken")
}

// ListTokens returns the bootstrap tokens stored in the cluster, by ID.
func ListTokens(ctx context.Context, client kubernetes.Interface) ([]Info, error) {
	list, err := client.CoreV1().Secrets(SecretNamespace).List(ctx, metav1.ListOptions{FieldSelector: "type=" + string(SecretType)})
	if err != nil {
		return nil, fmt.Errorf("list token secrets: %w", err)
	}
	var out []Info
	for i := range list.Items {
		if info, ok := InfoFromSecret(&list.Items[i]); ok {
			out = append(out, info)
		}
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// DeleteToken removes a token by ID (or by "<id>.<secret>", as kubeadm also accepts).
func DeleteToken(ctx context.Context, client kubernetes.Interface, id string) error {
	if t, ok := ParseBearer(id); ok {
		id = t.ID
	}
	if !ValidID(id) {
		return fmt.Errorf("%q is not a token ID (6 characters of [a-z0-9])", id)
	}
	err := client.CoreV1().Secrets(SecretNamespace).Delete(ctx, SecretPrefix+id, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("token %s not found", id)
	}
	if err != nil {
		return fmt.Errorf("delete token %s: %w", id, err)
	}
	return nil
}

// IsTokenSecret reports whether s is a bootstrap token Secret (for the token cleaner's filter).
func IsTokenSecret(s *corev1.Secret) bool {
	return s.Namespace == SecretNamespace && s.Type == SecretType && strings.HasPrefix(s.Name, SecretPrefix)
}
