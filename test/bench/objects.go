package bench

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ContentTypeProtobuf is Kubernetes' protobuf media type.
const ContentTypeProtobuf = "application/vnd.kubernetes.protobuf"

// configMap builds a ConfigMap whose data holds payloadBytes bytes.
func configMap(namespace, name string, payloadBytes int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": "bench"}},
		Data:       map[string]string{"payload": strings.Repeat("x", payloadBytes)},
	}
}

// clientFor returns a clientset speaking contentType ("" or JSON: JSON; protobuf: protobuf requests
// and responses).
func clientFor(base *rest.Config, contentType string) (*kubernetes.Clientset, error) {
	cfg := rest.CopyConfig(base)
	if contentType == ContentTypeProtobuf {
		cfg.ContentType = ContentTypeProtobuf
		cfg.AcceptContentTypes = ContentTypeProtobuf + ",application/json"
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return cs, nil
}

func ensureNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

func contentTypeName(ct string) string {
	if ct == ContentTypeProtobuf {
		return "protobuf"
	}
	return "json"
}
