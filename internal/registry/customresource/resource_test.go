package customresource

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
	"github.com/skiff-sh/skiff/internal/registry"
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

// TestStorageVersionHashIsTheStorageVersions checks that every served version of a definition
// shows the hash of the storage version's group/version/kind in discovery, as kube-apiserver
// does (the discovery spec "should locate the groupVersion and a resource within each
// APIGroup" recomputes it), and that a change of storage version changes it.
func TestStorageVersionHashIsTheStorageVersions(t *testing.T) {
	crd := func(storage string) *crdv1.CustomResourceDefinition {
		schema := &crdv1.CustomResourceValidation{OpenAPIV3Schema: &crdv1.JSONSchemaProps{Type: "object"}}
		return &crdv1.CustomResourceDefinition{Spec: crdv1.CustomResourceDefinitionSpec{
			Group: "stable.example.com", Scope: crdv1.NamespaceScoped,
			Names: crdv1.CustomResourceDefinitionNames{Plural: "crontabs", Singular: "crontab", Kind: "CronTab"},
			Versions: []crdv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: storage == "v1", Schema: schema},
				{Name: "v2", Served: true, Storage: storage == "v2", Schema: schema},
			},
		}}
	}
	for _, tc := range []struct{ storage, want string }{
		{"v1", "EdX2FP+L0js="}, // sha256("stable.example.com/v1/CronTab")[:8], base64
		{"v2", registry.StorageVersionHash("stable.example.com", "v2", "CronTab")},
	} {
		resources, err := Resources(crd(tc.storage), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(resources) != 2 {
			t.Fatalf("%d resources, want 2", len(resources))
		}
		for _, r := range resources {
			if r.StorageVersionHash != tc.want {
				t.Errorf("storage %s: %s shows %q, want %q", tc.storage, r.GroupVersion, r.StorageVersionHash, tc.want)
			}
		}
	}
}
