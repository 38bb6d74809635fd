package apiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/serviceaccount"
)

// TestActionSubresourceRouting checks what the HTTP layer owns of the action subresources
// (pods/binding, pods/eviction, serviceaccounts/token): create only, the body decoded in the
// action's kind (a body without apiVersion and kind is taken to be of it), ?dryRun passed on, and
// an object answer encoded in the action's version. What the actions decide is tested in
// internal/registry/core.
func TestActionSubresourceRouting(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := serviceaccount.NewIssuer(key, "https://skiff.test")
	if err != nil {
		t.Fatal(err)
	}
	c := startTestCluster(t, func(cfg *Config) {
		cfg.ServiceAccountTokens = &ServiceAccountTokens{Issuer: issuer, Audiences: []string{"https://skiff.test"}}
	})
	ctx := context.Background()
	ns := c.namespace(t, "actions")
	pods := c.client.CoreV1().Pods(ns)
	if _, err := pods.Create(ctx, makePod("web").ns(ns).obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rest := c.client.CoreV1().RESTClient()

	t.Run("create only", func(t *testing.T) {
		err := rest.Get().Namespace(ns).Resource("pods").Name("web").SubResource("eviction").Do(ctx).Error()
		wantStatus(t, err, 405, `get is not supported on resources of kind "pods/eviction"`)
	})
	t.Run("a body that is not of the action's kind", func(t *testing.T) {
		err := rest.Post().Namespace(ns).Resource("pods").Name("web").SubResource("eviction").
			Body([]byte(`{"apiVersion":"policy/v1","kind":"Eviction","deleteOptions":"no"}`)).SetHeader("Content-Type", "application/json").Do(ctx).Error()
		wantStatus(t, err, 400, `Eviction in version "v1" cannot be handled as a Eviction`)
	})
	t.Run("dry run from the query", func(t *testing.T) {
		err := rest.Post().Namespace(ns).Resource("pods").Name("web").SubResource("eviction").Param("dryRun", "All").
			Body([]byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web"}}`)).SetHeader("Content-Type", "application/json").Do(ctx).Error()
		if err != nil {
			t.Fatal(err)
		}
		pod, err := pods.Get(ctx, "web", metav1.GetOptions{})
		if err != nil || pod.DeletionTimestamp != nil || len(pod.Status.Conditions) != 0 {
			t.Fatalf("a dry-run eviction changed the pod: %v %+v", err, pod)
		}
	})
	t.Run("a body without apiVersion and kind", func(t *testing.T) {
		err := rest.Post().Namespace(ns).Resource("pods").Name("web").SubResource("binding").
			Body([]byte(`{"target":{"name":"node-1"}}`)).SetHeader("Content-Type", "application/json").Do(ctx).Error()
		if err != nil {
			t.Fatal(err)
		}
		pod, err := pods.Get(ctx, "web", metav1.GetOptions{})
		if err != nil || pod.Spec.NodeName != "node-1" {
			t.Fatalf("binding: %v, nodeName %q", err, pod.Spec.NodeName)
		}
	})
	t.Run("an object answer", func(t *testing.T) {
		if _, err := c.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "bot"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := c.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "bot", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Name != "bot" || strings.Count(tr.Status.Token, ".") != 2 || tr.Spec.Audiences[0] != "https://skiff.test" {
			t.Fatalf("token request answer %+v", tr)
		}
	})
}
