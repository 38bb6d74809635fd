package audit

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Attributes are what a policy decides on.
type Attributes struct {
	User            string
	Groups          []string
	Verb            string
	ResourceRequest bool
	APIGroup        string
	Resource        string
	Subresource     string
	Namespace       string
	Name            string
	Path            string
}

// Decision is the level of a request and the stages not to record.
type Decision struct {
	Level             Level
	OmitStages        []Stage
	OmitManagedFields bool
}

// LoadPolicy reads and validates a policy file.
func LoadPolicy(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("audit policy: %w", err)
	}
	p, err := ParsePolicy(data)
	if err != nil {
		return nil, fmt.Errorf("audit policy %s: %w", path, err)
	}
	return p, nil
}

// ParsePolicy validates a policy.
func ParsePolicy(data []byte) (*Policy, error) {
	var p Policy
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, err
	}
	if p.Kind != "Policy" || (p.APIVersion != "audit.k8s.io/v1" && p.APIVersion != "audit.k8s.io/v1beta1") {
		return nil, fmt.Errorf("kind %q, apiVersion %q: want Policy, audit.k8s.io/v1", p.Kind, p.APIVersion)
	}
	if len(p.Rules) == 0 {
		return nil, fmt.Errorf("rules: at least one rule is required")
	}
	for i, r := range p.Rules {
		switch r.Level {
		case LevelNone, LevelMetadata, LevelRequest, LevelRequestResponse:
		default:
			return nil, fmt.Errorf("rules[%d].level: %q is not None, Metadata, Request or RequestResponse", i, r.Level)
		}
		if len(r.NonResourceURLs) > 0 && (len(r.Resources) > 0 || len(r.Namespaces) > 0) {
			return nil, fmt.Errorf("rules[%d]: nonResourceURLs cannot be combined with resources or namespaces", i)
		}
		if err := validStages(r.OmitStages); err != nil {
			return nil, fmt.Errorf("rules[%d].omitStages: %w", i, err)
		}
	}
	if err := validStages(p.OmitStages); err != nil {
		return nil, fmt.Errorf("omitStages: %w", err)
	}
	return &p, nil
}

func validStages(stages []Stage) error {
	for _, s := range stages {
		switch s {
		case StageRequestReceived, StageResponseStarted, StageResponseComplete, StagePanic:
		default:
			return fmt.Errorf("unknown stage %q", s)
		}
	}
	return nil
}

// Decide is the policy's decision for a request: the first matching rule's level (None when no
// rule matches), with the policy's and the rule's omitted stages.
func (p *Policy) Decide(a Attributes) Decision {
	for _, r := range p.Rules {
		if !r.matches(a) {
			continue
		}
		omitManaged := p.OmitManagedFields
		if r.OmitManagedFields != nil {
			omitManaged = *r.OmitManagedFields
		}
		stages := append(slices.Clone(p.OmitStages), r.OmitStages...)
		return Decision{Level: r.Level, OmitStages: stages, OmitManagedFields: omitManaged}
	}
	return Decision{Level: LevelNone}
}

func (r *PolicyRule) matches(a Attributes) bool {
	if len(r.Users) > 0 && !slices.Contains(r.Users, a.User) {
		return false
	}
	if len(r.UserGroups) > 0 && !slices.ContainsFunc(r.UserGroups, func(g string) bool { return slices.Contains(a.Groups, g) }) {
		return false
	}
	if len(r.Verbs) > 0 && !slices.Contains(r.Verbs, a.Verb) {
		return false
	}
	if len(r.Resources) > 0 || len(r.Namespaces) > 0 {
		if !a.ResourceRequest {
			return false
		}
		if len(r.Namespaces) > 0 && !slices.Contains(r.Namespaces, a.Namespace) {
			return false
		}
		if len(r.Resources) > 0 && !slices.ContainsFunc(r.Resources, func(gr GroupResources) bool { return gr.matches(a) }) {
			return false
		}
		return true
	}
	if len(r.NonResourceURLs) > 0 {
		if a.ResourceRequest {
			return false
		}
		return slices.ContainsFunc(r.NonResourceURLs, func(u string) bool {
			if prefix, ok := strings.CutSuffix(u, "*"); ok {
				return strings.HasPrefix(a.Path, prefix)
			}
			return u == a.Path
		})
	}
	return true
}

// matches follows Kubernetes: "pods" is the resource without subresources, "pods/log" one
// subresource, "pods/*" pods and every subresource of it, "*/scale" one subresource of every resource,
// "*" every resource and subresource.
func (gr GroupResources) matches(a Attributes) bool {
	if gr.Group != a.APIGroup {
		return false
	}
	if len(gr.Resources) > 0 {
		full := a.Resource
		if a.Subresource != "" {
			full += "/" + a.Subresource
		}
		ok := slices.ContainsFunc(gr.Resources, func(res string) bool {
			switch {
			case res == "*" || res == full:
				return true
			case strings.HasPrefix(res, "*/"):
				return a.Subresource == strings.TrimPrefix(res, "*/")
			case strings.HasSuffix(res, "/*"):
				return a.Resource == strings.TrimSuffix(res, "/*")
			}
			return false
		})
		if !ok {
			return false
		}
	}
	if len(gr.ResourceNames) > 0 && !slices.Contains(gr.ResourceNames, a.Name) {
		return false
	}
	return true
}
