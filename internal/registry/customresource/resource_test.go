package customresource

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
)

// TestScaleCarriesIdentity checks that a custom resource's Scale names its object, as built-in
// resources' do: a client PUTs the Scale back by that name.
func TestScaleCarriesIdentity(t *testing.T) {
	acc := scaleAccessor(&crdv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas",
		LabelSelectorPath: ptr.To(".status.selector")})
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "a", "namespace": "n", "uid": "u-1", "resourceVersion": "7"},
		"spec":     map[string]any{"replicas": int64(2)},
		"status":   map[string]any{"replicas": int64(1), "selector": "app=a"},
	}}
	s, err := acc.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "a" || s.Namespace != "n" || s.UID != "u-1" || s.ResourceVersion != "7" || s.Kind != "Scale" {
		t.Errorf("scale meta %+v %+v", s.TypeMeta, s.ObjectMeta)
	}
	if s.Spec.Replicas != 2 || s.Status.Replicas != 1 || s.Status.Selector != "app=a" {
		t.Errorf("scale %+v %+v", s.Spec, s.Status)
	}
}
