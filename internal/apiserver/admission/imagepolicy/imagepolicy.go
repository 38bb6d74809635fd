package imagepolicy

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
)

// Rule is a list of allowed image prefixes. A prefix matches on a path boundary: "registry.k8s.io"
// and "registry.k8s.io/" allow every image of that registry, "docker.io/library/nginx" allows
// that repository with any tag or digest but not "docker.io/library/nginx-foo". Images are
// compared in their full form: "nginx" is "docker.io/library/nginx:latest".
type Rule struct {
	Allow []string `json:"allow"`
}

// Policy is the --image-policy file: the default rule and rules per namespace (a namespace's rule
// replaces the default). A missing default allows everything not covered by a namespace rule.
//
//	apiVersion: skiff.sh/v1alpha1
//	kind: ImagePolicy
//	default:
//	  allow: ["registry.k8s.io", "docker.io/library/"]
//	namespaces:
//	  team-a:
//	    allow: ["ghcr.io/team-a/"]
type Policy struct {
	APIVersion string          `json:"apiVersion,omitempty"`
	Kind       string          `json:"kind,omitempty"`
	Default    *Rule           `json:"default,omitempty"`
	Namespaces map[string]Rule `json:"namespaces,omitempty"`
}

// Load reads a policy file (YAML or JSON); "" is no policy (allow all).
func Load(path string) (*Policy, error) {
	if path == "" {
		return &Policy{}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read image policy: %w", err)
	}
	return Parse(data)
}

// Parse reads a policy from YAML or JSON, strictly.
func Parse(data []byte) (*Policy, error) {
	var p Policy
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, fmt.Errorf("parse image policy: %w", err)
	}
	if p.Kind != "" && p.Kind != "ImagePolicy" {
		return nil, fmt.Errorf("parse image policy: kind %q, want ImagePolicy", p.Kind)
	}
	check := func(where string, r Rule) error {
		for _, a := range r.Allow {
			if strings.TrimSpace(a) == "" {
				return fmt.Errorf("parse image policy: %s: an empty prefix", where)
			}
		}
		return nil
	}
	if p.Default != nil {
		if err := check("default", *p.Default); err != nil {
			return nil, err
		}
	}
	for ns, r := range p.Namespaces {
		if err := check("namespace "+ns, r); err != nil {
			return nil, err
		}
	}
	return &p, nil
}

// Normalize is an image reference in full: registry, repository and a tag (latest if none) or digest.
func Normalize(image string) string {
	name, rest := image, ""
	if i := strings.Index(name, "@"); i >= 0 {
		name, rest = name[:i], name[i:]
	}
	if i := strings.LastIndex(name, ":"); i >= 0 && !strings.Contains(name[i:], "/") {
		name, rest = name[:i], name[i:]+rest
	}
	if rest == "" {
		rest = ":latest"
	}
	first, _, hasSlash := strings.Cut(name, "/")
	switch {
	case !hasSlash:
		name = "docker.io/library/" + name
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		name = "docker.io/" + name
	}
	return name + rest
}

// matches reports whether image (normalized) is under prefix on a path boundary.
func matches(image, prefix string) bool {
	prefix = strings.TrimSpace(prefix)
	if !strings.HasPrefix(image, prefix) {
		return false
	}
	if len(image) == len(prefix) || strings.HasSuffix(prefix, "/") {
		return true
	}
	switch image[len(prefix)] {
	case '/', ':', '@':
		return true
	}
	return false
}

// Violation is a refused image.
type Violation struct {
	Container, Image string
}

// rule is the rule for namespace and how to name it, or nil when everything is allowed.
func (p *Policy) rule(namespace string) (*Rule, string) {
	if r, ok := p.Namespaces[namespace]; ok {
		return &r, fmt.Sprintf("namespace %q", namespace)
	}
	if p.Default != nil {
		return p.Default, "default"
	}
	return nil, ""
}

// Check lists the containers of spec whose image the namespace's rule does not allow, and names
// the rule.
func (p *Policy) Check(namespace string, spec *corev1.PodSpec) ([]Violation, string, []string) {
	rule, name := p.rule(namespace)
	if rule == nil {
		return nil, "", nil
	}
	var out []Violation
	visit := func(container, image string) {
		full := Normalize(image)
		for _, a := range rule.Allow {
			if matches(full, a) || matches(image, a) {
				return
			}
		}
		out = append(out, Violation{Container: container, Image: image})
	}
	for _, c := range spec.InitContainers {
		visit(c.Name, c.Image)
	}
	for _, c := range spec.Containers {
		visit(c.Name, c.Image)
	}
	for _, c := range spec.EphemeralContainers {
		visit(c.Name, c.Image)
	}
	return out, name, rule.Allow
}

// Message is the refusal for violations under the named rule.
func Message(namespace, rule string, allowed []string, vs []Violation) string {
	parts := make([]string, 0, len(vs))
	for _, v := range vs {
		parts = append(parts, fmt.Sprintf("image %q (container %q)", v.Image, v.Container))
	}
	allow := "none"
	if len(allowed) > 0 {
		sorted := append([]string(nil), allowed...)
		sort.Strings(sorted)
		allow = strings.Join(sorted, ", ")
	}
	return fmt.Sprintf("image policy: %s not allowed in namespace %q by the %s rule (allowed prefixes: %s)",
		strings.Join(parts, ", "), namespace, rule, allow)
}

// Plugin is the image policy admission plugin.
type Plugin struct {
	policy *Policy
	log    *slog.Logger
}

var _ admission.Plugin = &Plugin{}

// New builds the plugin over a loaded policy.
func New(p *Policy, log *slog.Logger) *Plugin {
	if p == nil {
		p = &Policy{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Plugin{policy: p, log: log}
}

// Name names the plugin.
func (*Plugin) Name() string { return "ImagePolicy" }

// Admit does nothing: the policy only validates.
func (*Plugin) Admit(context.Context, *admission.Attributes, admission.Lookup) error {
	return nil
}

// Validate refuses pod creates and updates (and ephemeral containers) with a disallowed image.
func (p *Plugin) Validate(_ context.Context, a *admission.Attributes, _ admission.Lookup) error {
	if (a.Verb != "create" && a.Verb != "update") || a.Resource.GroupResource() != (schema.GroupResource{Resource: "pods"}) {
		return nil
	}
	if a.Subresource != "" && a.Subresource != "ephemeralcontainers" {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	vs, rule, allowed := p.policy.Check(a.Namespace, &pod.Spec)
	if old, ok := a.OldObject.(*corev1.Pod); ok {
		vs = changedImages(vs, old)
	}
	if len(vs) == 0 {
		return nil
	}
	p.log.Info("image policy refused a pod", "namespace", a.Namespace, "name", a.Name, "rule", rule, "image", vs[0].Image)
	return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, fmt.Errorf("%s", Message(a.Namespace, rule, allowed, vs)))
}

// changedImages drops violations an update did not introduce: a container keeping the image it
// had is not judged again (the policy may have changed since it was admitted).
func changedImages(vs []Violation, old *corev1.Pod) []Violation {
	had := map[string]string{}
	for _, cs := range [][]corev1.Container{old.Spec.InitContainers, old.Spec.Containers} {
		for _, c := range cs {
			had[c.Name] = c.Image
		}
	}
	for _, c := range old.Spec.EphemeralContainers {
		had[c.Name] = c.Image
	}
	var out []Violation
	for _, v := range vs {
		if img, ok := had[v.Container]; !ok || img != v.Image {
			out = append(out, v)
		}
	}
	return out
}
