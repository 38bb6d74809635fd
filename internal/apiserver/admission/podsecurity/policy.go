package podsecurity

import (
	"fmt"
	"os"
	"regexp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// The namespace labels that set a namespace's policy.
const (
	labelPrefix   = "pod-security.kubernetes.io/"
	EnforceLabel  = labelPrefix + "enforce"
	AuditLabel    = labelPrefix + "audit"
	WarnLabel     = labelPrefix + "warn"
	versionSuffix = "-version"
	latest        = "latest"
)

// LevelVersion is a level at a version of the standards ("latest" or "v1.N"), printed as upstream
// prints it: "restricted:latest". The version picks the checks (EvaluateAt).
type LevelVersion struct {
	Level   Level
	Version string
}

func (lv LevelVersion) String() string { return string(lv.Level) + ":" + lv.Version }

// Policy is a namespace's three modes.
type Policy struct {
	Enforce, Audit, Warn LevelVersion
}

// privileged reports whether no mode checks anything.
func (p Policy) privileged() bool {
	return p.Enforce.Level == Privileged && p.Audit.Level == Privileged && p.Warn.Level == Privileged
}

// Defaults are the levels of namespaces without labels, as in upstream's PodSecurityConfiguration.
type Defaults struct {
	Enforce        string `json:"enforce,omitempty"`
	EnforceVersion string `json:"enforce-version,omitempty"`
	Audit          string `json:"audit,omitempty"`
	AuditVersion   string `json:"audit-version,omitempty"`
	Warn           string `json:"warn,omitempty"`
	WarnVersion    string `json:"warn-version,omitempty"`
}

// Exemptions are requests PodSecurity does not judge.
type Exemptions struct {
	Usernames      []string `json:"usernames,omitempty"`
	RuntimeClasses []string `json:"runtimeClasses,omitempty"`
	Namespaces     []string `json:"namespaces,omitempty"`
}

// Config is upstream's PodSecurityConfiguration (pod-security.admission.config.k8s.io/v1): the
// default levels and the exemptions.
type Config struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Defaults   Defaults   `json:"defaults"`
	Exemptions Exemptions `json:"exemptions"`
}

// LoadConfig reads a PodSecurityConfiguration file; "" is the default configuration (everything
// privileged, nothing exempt), as upstream.
func LoadConfig(path string) (Config, error) {
	var c Config
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return c, fmt.Errorf("read pod security configuration: %w", err)
		}
		if err := yaml.UnmarshalStrict(data, &c); err != nil {
			return c, fmt.Errorf("parse pod security configuration %s: %w", path, err)
		}
		if c.Kind != "" && c.Kind != "PodSecurityConfiguration" {
			return c, fmt.Errorf("pod security configuration %s: kind %q, want PodSecurityConfiguration", path, c.Kind)
		}
	}
	if _, errs := c.policy(nil); len(errs) > 0 {
		return c, fmt.Errorf("pod security configuration %s: %w", path, errs.ToAggregate())
	}
	return c, nil
}

var versionPattern = regexp.MustCompile(`^v1\.(0|[1-9][0-9]*)$`)

// parseLevel is level, or restricted (fail closed) with an error when it is not a level.
func parseLevel(s string) (Level, error) {
	switch l := Level(s); l {
	case Privileged, Baseline, Restricted:
		return l, nil
	}
	return Restricted, fmt.Errorf("must be one of privileged, baseline, restricted")
}

// parseVersion is "latest" or "v1.N", or latest with an error.
func parseVersion(s string) (string, error) {
	if s == latest || versionPattern.MatchString(s) {
		return s, nil
	}
	return latest, fmt.Errorf(`must be "latest" or "v1.x"`)
}

// policy is the namespace's policy from its labels over the configured defaults, and the labels'
// errors (a bad level is evaluated as restricted, a bad version as latest).
func (c Config) policy(labels map[string]string) (Policy, field.ErrorList) {
	var errs field.ErrorList
	labelsPath := field.NewPath("metadata", "labels")
	mode := func(key, defLevel, defVersion string) LevelVersion {
		lv := LevelVersion{Level: Privileged, Version: latest}
		level, fromLabel := labels[key]
		if !fromLabel {
			level = defLevel
		}
		if level != "" {
			l, err := parseLevel(level)
			if err != nil {
				errs = append(errs, invalid(labelsPath, key, fromLabel, level, err))
			}
			lv.Level = l
		}
		version, fromLabel := labels[key+versionSuffix]
		if !fromLabel {
			version = defVersion
		}
		if version != "" {
			v, err := parseVersion(version)
			if err != nil {
				errs = append(errs, invalid(labelsPath, key+versionSuffix, fromLabel, version, err))
			}
			lv.Version = v
		}
		return lv
	}
	d := c.Defaults
	return Policy{
		Enforce: mode(EnforceLabel, d.Enforce, d.EnforceVersion),
		Audit:   mode(AuditLabel, d.Audit, d.AuditVersion),
		Warn:    mode(WarnLabel, d.Warn, d.WarnVersion),
	}, errs
}

func invalid(labels *field.Path, key string, fromLabel bool, value string, err error) *field.Error {
	if fromLabel {
		return field.Invalid(labels.Key(key), value, err.Error())
	}
	return field.Invalid(field.NewPath("defaults", key[len(labelPrefix):]), value, err.Error())
}

// exemptNamespace, exemptUser and exemptRuntimeClass report the configured exemptions.
func (c Config) exemptNamespace(ns string) bool { return slices.Contains(c.Exemptions.Namespaces, ns) }

func (c Config) exemptUser(user string) bool { return slices.Contains(c.Exemptions.Usernames, user) }

func (c Config) exemptRuntimeClass(spec *corev1.PodSpec) bool {
	return spec.RuntimeClassName != nil && slices.Contains(c.Exemptions.RuntimeClasses, *spec.RuntimeClassName)
}
