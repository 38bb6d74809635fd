package imagepolicy

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/registry"
)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"nginx":                          "docker.io/library/nginx:latest",
		"nginx:1.27":                     "docker.io/library/nginx:1.27",
		"bitnami/redis":                  "docker.io/bitnami/redis:latest",
		"registry.k8s.io/pause:3.10":     "registry.k8s.io/pause:3.10",
		"localhost:5000/app":             "localhost:5000/app:latest",
		"localhost/app@sha256:abc":       "localhost/app@sha256:abc",
		"ghcr.io/org/app:v1@sha256:abcd": "ghcr.io/org/app:v1@sha256:abcd",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

const policyYAML = `
apiVersion: skiff.sh/v1alpha1
kind: ImagePolicy
default:
  allow: ["registry.k8s.io", "docker.io/library/"]
namespaces:
  team-a:
    allow: ["ghcr.io/team-a/", "docker.io/library/nginx"]
  locked:
    allow: []
`

func spec(images ...string) *corev1.PodSpec {
	s := &corev1.PodSpec{}
	for i, img := range images {
		s.Containers = append(s.Containers, corev1.Container{Name: string(rune('a' + i)), Image: img})
	}
	return s
}

func TestCheck(t *testing.T) {
	p, err := Parse([]byte(policyYAML))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, namespace string
		images          []string
		wantRefused     []string
		wantRule        string
	}{
		{"default allows library images", "default", []string{"busybox", "nginx:1.27", "registry.k8s.io/pause:3.10"}, nil, ""},
		{"default refuses another registry", "default", []string{"busybox", "quay.io/evil/miner"}, []string{"quay.io/evil/miner"}, "default"},
		{"a registry prefix is on a path boundary", "default", []string{"registry.k8s.io.evil.com/x"}, []string{"registry.k8s.io.evil.com/x"}, "default"},
		{"a namespace rule replaces the default", "team-a", []string{"ghcr.io/team-a/api:v2", "nginx", "busybox"}, []string{"busybox"}, `namespace "team-a"`},
		{"a repository prefix does not allow a longer name", "team-a", []string{"nginx-ingress"}, []string{"nginx-ingress"}, `namespace "team-a"`},
		{"an empty list allows nothing", "locked", []string{"busybox"}, []string{"busybox"}, `namespace "locked"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs, rule, _ := p.Check(tt.namespace, spec(tt.images...))
			var got []string
			for _, v := range vs {
				got = append(got, v.Image)
			}
			if len(got) != len(tt.wantRefused) || (len(got) > 0 && (got[0] != tt.wantRefused[0] || rule != tt.wantRule)) {
				t.Errorf("refused %v by %q, want %v by %q", got, rule, tt.wantRefused, tt.wantRule)
			}
		})
	}
	if vs, _, _ := (&Policy{}).Check("any", spec("quay.io/x/y")); len(vs) != 0 {
		t.Errorf("no policy refused %v", vs)
	}
	if _, err := Parse([]byte("default: {allow: [x]}\nextra: 1\n")); err == nil {
		t.Errorf("an unknown field was accepted")
	}
}

func TestPlugin(t *testing.T) {
	p, err := Parse([]byte(policyYAML))
	if err != nil {
		t.Fatal(err)
	}
	pods := &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Plural: "pods", Namespaced: true}
	pod := func(img string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}, Spec: *spec(img)}
	}
	plugin := New(p, nil)
	err = plugin.Validate(context.Background(), &admission.Attributes{Verb: "create", Resource: pods, Namespace: "default", Name: "x", Object: pod("quay.io/evil/miner:1")}, nil)
	want := `pods "x" is forbidden: image policy: image "quay.io/evil/miner:1" (container "a") not allowed in namespace "default" by the default rule (allowed prefixes: docker.io/library/, registry.k8s.io)`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	// An update that keeps a container's image is not judged again.
	err = plugin.Validate(context.Background(), &admission.Attributes{Verb: "update", Resource: pods, Namespace: "default", Name: "x",
		Object: pod("quay.io/evil/miner:1"), OldObject: pod("quay.io/evil/miner:1")}, nil)
	if err != nil {
		t.Fatalf("unchanged image: %v", err)
	}
}
