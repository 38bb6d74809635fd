package openapi

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestGeneratedDefinitionsAreClosed guards hack/update-openapi.sh's package list: every definition a
// generated schema depends on must itself be generated.
func TestGeneratedDefinitionsAreClosed(t *testing.T) {
	defs, err := buildDefinitions(nil, nil)
	if err != nil {
		t.Fatalf("buildDefinitions: %v", err)
	}
	for name, deps := range defs.dependencies {
		for _, dep := range deps {
			if _, ok := defs.v2[dep]; !ok {
				t.Errorf("%s depends on %s, which is not generated: add its package to hack/update-openapi.sh", name, dep)
			}
		}
	}
	for _, want := range []string{
		"io.k8s.api.core.v1.Pod", "io.k8s.api.apps.v1.Deployment", "io.k8s.api.batch.v1.CronJob",
		"io.k8s.api.coordination.v1.Lease", "io.k8s.api.discovery.v1.EndpointSlice", "io.k8s.api.events.v1.Event",
		"io.k8s.api.policy.v1.PodDisruptionBudget", "io.k8s.api.policy.v1.Eviction", "io.k8s.api.rbac.v1.ClusterRoleBinding",
		"io.k8s.api.scheduling.v1.PriorityClass", "io.k8s.api.autoscaling.v1.Scale",
		"io.k8s.api.authentication.v1.TokenReview", "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
		"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
		"io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList", "io.k8s.apimachinery.pkg.runtime.RawExtension",
		"io.k8s.apimachinery.pkg.util.intstr.IntOrString", "io.k8s.apimachinery.pkg.api.resource.Quantity",
		"io.k8s.apimachinery.pkg.version.Info", "io.k8s.api.apidiscovery.v2.APIGroupDiscoveryList",
	} {
		if _, ok := defs.v2[want]; !ok {
			t.Errorf("definition %s not generated", want)
		}
	}
}

func TestKindsComeFromScheme(t *testing.T) {
	defs, err := buildDefinitions(testScheme(t), nil)
	if err != nil {
		t.Fatalf("buildDefinitions: %v", err)
	}
	tests := []struct {
		definition string
		want       []schema.GroupVersionKind
		notWant    []schema.GroupVersionKind
	}{
		{definition: "io.k8s.api.core.v1.Pod", want: []schema.GroupVersionKind{{Version: "v1", Kind: "Pod"}}},
		{definition: "io.k8s.api.apps.v1.DeploymentList", want: []schema.GroupVersionKind{{Group: "apps", Version: "v1", Kind: "DeploymentList"}}},
		// Registered in every group-version of the scheme, never in the internal version.
		{
			definition: "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
			want:       []schema.GroupVersionKind{{Version: "v1", Kind: "DeleteOptions"}, {Group: "apps", Version: "v1", Kind: "DeleteOptions"}},
			notWant:    []schema.GroupVersionKind{{Group: "apps", Version: "__internal", Kind: "DeleteOptions"}},
		},
		{definition: "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent", notWant: []schema.GroupVersionKind{{Version: "__internal", Kind: "WatchEvent"}}},
	}
	for _, tc := range tests {
		t.Run(tc.definition, func(t *testing.T) {
			for _, form := range []struct {
				name string
				ext  map[string]interface{}
			}{{"v2", defs.v2[tc.definition].Extensions}, {"v3", defs.v3[tc.definition].Extensions}} {
				for _, gvk := range tc.want {
					if !hasKind(form.ext, gvk) {
						t.Errorf("%s: %v missing from %#v", form.name, gvk, form.ext[extensionGVK])
					}
				}
				for _, gvk := range tc.notWant {
					if hasKind(form.ext, gvk) {
						t.Errorf("%s: unexpected %v", form.name, gvk)
					}
				}
			}
		})
	}
	// Field types are not kinds.
	if _, ok := defs.v2["io.k8s.api.core.v1.PodSpec"].Extensions[extensionGVK]; ok {
		t.Errorf("PodSpec carries a GVK extension")
	}
}

func TestDefinitionNames(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"model name method", DefinitionName(reflect.TypeOf(&corev1.Pod{})), "io.k8s.api.core.v1.Pod"},
		{"meta type", DefinitionName(reflect.TypeOf(metav1.ObjectMeta{})), "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
		{"go path of a type without a model name", DefinitionName(reflect.TypeOf(undocumented{})), "com.github.skiff_sh.skiff.internal.openapi.undocumented"},
		{"github import path", GoTypeDefinitionName("github.com/example/widget-operator/api/v1", "Widget"), "com.github.example.widget_operator.api.v1.Widget"},
		{"normalize go name", normalizeDefinitionName("k8s.io/api/scheduling/v1alpha3.WorkloadPodGroupSchedulingPolicy"), "io.k8s.api.scheduling.v1alpha3.WorkloadPodGroupSchedulingPolicy"},
		{"normalize keeps published name", normalizeDefinitionName("io.k8s.api.core.v1.Pod"), "io.k8s.api.core.v1.Pod"},
		{"core operation prefix", groupOperationPrefix(""), "Core"},
		{"dotted group prefix", groupOperationPrefix("rbac.authorization.k8s.io"), "RbacAuthorization"},
		{"custom group prefix", groupOperationPrefix("stable.example-corp.com"), "StableExampleCorpCom"},
		{"tag", groupTag("rbac.authorization.k8s.io", "v1"), "rbacAuthorization_v1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}
