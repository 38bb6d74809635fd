package podsecurity

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
)

// Audit annotation keys, as upstream's.
const (
	AuditEnforcedPolicy = "pod-security.kubernetes.io/enforce-policy"
	AuditViolations     = "pod-security.kubernetes.io/audit-violations"
	AuditExempt         = "pod-security.kubernetes.io/exempt"
)

// Decision is what PodSecurity makes of one pod or pod template: a denial message (empty when
// allowed), warnings for the client and audit annotations.
type Decision struct {
	Deny     string
	Warnings []string
	Audit    map[string]string
}

// Decide judges a pod (enforce, audit, warn) or a workload's pod template (audit and warn only)
// under policy. Warnings are not added to a request that is denied, as upstream.
func Decide(p Policy, meta *metav1.ObjectMeta, spec *corev1.PodSpec, isPod bool) Decision {
	d := Decision{Audit: map[string]string{}}
	results := map[LevelVersion][]Violation{}
	eval := func(lv LevelVersion) []Violation {
		vs, ok := results[lv]
		if !ok {
			vs = EvaluateAt(lv, meta, spec)
			results[lv] = vs
		}
		return vs
	}
	if isPod {
		d.Audit[AuditEnforcedPolicy] = p.Enforce.String()
		if vs := eval(p.Enforce); len(vs) > 0 {
			d.Deny = fmt.Sprintf("violates PodSecurity %q: %s", p.Enforce.String(), Detail(vs))
		}
	}
	if vs := eval(p.Audit); len(vs) > 0 {
		d.Audit[AuditViolations] = fmt.Sprintf("would violate PodSecurity %q: %s", p.Audit.String(), Detail(vs))
	}
	if d.Deny == "" {
		if vs := eval(p.Warn); len(vs) > 0 {
			d.Warnings = append(d.Warnings, fmt.Sprintf("would violate PodSecurity %q: %s", p.Warn.String(), Detail(vs)))
		}
	}
	return d
}

// ExistingPodWarnings are upstream's warnings when a namespace's enforce level is tightened: one
// line per distinct set of violations naming the first pod (by name) and how many others share it,
// after a summary line.
func ExistingPodWarnings(namespace string, enforce LevelVersion, pods []corev1.Pod) []string {
	type group struct {
		first string
		count int
	}
	groups := map[string]*group{}
	var order []string
	for i := range pods {
		vs := EvaluateAt(enforce, &pods[i].ObjectMeta, &pods[i].Spec)
		if len(vs) == 0 {
			continue
		}
		key := Reasons(vs)
		g, ok := groups[key]
		if !ok {
			g = &group{first: pods[i].Name}
			groups[key] = g
			order = append(order, key)
		} else if pods[i].Name < g.first {
			g.first = pods[i].Name
		}
		g.count++
	}
	if len(order) == 0 {
		return nil
	}
	out := []string{fmt.Sprintf("existing pods in namespace %q violate the new PodSecurity enforce level %q", namespace, enforce.String())}
	sort.Strings(order)
	for _, key := range order {
		g := groups[key]
		switch g.count {
		case 1:
			out = append(out, fmt.Sprintf("%s: %s", g.first, key))
		case 2:
			out = append(out, fmt.Sprintf("%s (and 1 other pod): %s", g.first, key))
		default:
			out = append(out, fmt.Sprintf("%s (and %d other pods): %s", g.first, g.count-1, key))
		}
	}
	return out
}

// Plugin is the PodSecurity admission plugin.
type Plugin struct {
	cfg Config
	log *slog.Logger
}

var _ admission.Plugin = &Plugin{}

// New builds the plugin over a configuration (LoadConfig).
func New(cfg Config, log *slog.Logger) *Plugin {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Plugin{cfg: cfg, log: log}
}

// Name is Kubernetes' plugin name.
func (*Plugin) Name() string { return "PodSecurity" }

// Admit does nothing: PodSecurity only validates.
func (*Plugin) Admit(context.Context, *admission.Attributes, admission.Lookup) error {
	return nil
}

// ignoredPodSubresources do not change a pod's spec.
var ignoredPodSubresources = map[string]bool{
	"exec": true, "attach": true, "binding": true, "eviction": true, "log": true, "portforward": true, "proxy": true, "status": true,
}

var (
	podsGR       = schema.GroupResource{Resource: "pods"}
	namespacesGR = schema.GroupResource{Resource: "namespaces"}
)

// Validate judges pods, workloads' pod templates and namespaces' policy labels.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) error {
	if a.Verb != "create" && a.Verb != "update" {
		return nil
	}
	gr := a.Resource.GroupResource()
	if gr == namespacesGR {
		return p.validateNamespace(ctx, a, lookup)
	}
	var meta *metav1.ObjectMeta
	var spec *corev1.PodSpec
	isPod := gr == podsGR
	if isPod {
		if ignoredPodSubresources[a.Subresource] {
			return nil
		}
		pod, ok := a.Object.(*corev1.Pod)
		if !ok {
			return nil
		}
		if old, ok := a.OldObject.(*corev1.Pod); ok && !significantPodUpdate(pod, old) {
			return nil
		}
		meta, spec = &pod.ObjectMeta, &pod.Spec
	} else {
		if a.Subresource != "" {
			return nil
		}
		tmpl := podTemplate(a.Object)
		if tmpl == nil {
			return nil
		}
		meta, spec = &tmpl.ObjectMeta, &tmpl.Spec
	}
	if reason := p.exempt(a, spec); reason != "" {
		a.AddAuditAnnotation(AuditExempt, reason)
		return nil
	}
	obj, err := lookup.Get(ctx, "", "namespaces", "", a.Namespace)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil // NamespaceLifecycle speaks for a missing namespace
		}
		return apierrors.NewInternalError(fmt.Errorf("failed to lookup namespace %q", a.Namespace))
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return nil
	}
	policy, _ := p.cfg.policy(ns.Labels)
	if policy.privileged() {
		return nil
	}
	d := Decide(policy, meta, spec, isPod)
	for k, v := range d.Audit {
		a.AddAuditAnnotation(k, v)
	}
	for _, w := range d.Warnings {
		admission.AddWarning(ctx, w)
	}
	if d.Deny != "" {
		return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, fmt.Errorf("%s", d.Deny))
	}
	return nil
}

// exempt names the exemption that lets a request through ("namespace", "user", "runtimeClass"), or "".
func (p *Plugin) exempt(a *admission.Attributes, spec *corev1.PodSpec) string {
	switch {
	case p.cfg.exemptNamespace(a.Namespace):
		return "namespace"
	case a.User != nil && p.cfg.exemptUser(a.User.Name):
		return "user"
	case p.cfg.exemptRuntimeClass(spec):
		return "runtimeClass"
	}
	return ""
}

// validateNamespace refuses invalid policy labels (on create, or when an update changes them) and,
// when an update tightens the enforce level, warns about the namespace's pods that would now fail.
func (p *Plugin) validateNamespace(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) error {
	if a.Subresource != "" {
		return nil
	}
	ns, ok := a.Object.(*corev1.Namespace)
	if !ok {
		return nil
	}
	policy, errs := p.cfg.policy(ns.Labels)
	old, _ := a.OldObject.(*corev1.Namespace)
	if len(errs) > 0 {
		if old == nil {
			return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Namespace").GroupKind(), a.Name, errs)
		}
		if _, oldErrs := p.cfg.policy(old.Labels); len(oldErrs) == 0 || !apiequality.Semantic.DeepEqual(errs, oldErrs) {
			return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Namespace").GroupKind(), a.Name, errs)
		}
	}
	if old == nil {
		return nil
	}
	oldPolicy, _ := p.cfg.policy(old.Labels)
	if !tightened(policy.Enforce, oldPolicy.Enforce) || p.cfg.exemptNamespace(a.Name) {
		return nil
	}
	list, err := lookup.List(ctx, "", "pods", a.Name)
	if err != nil {
		p.log.Warn("list pods to check a new PodSecurity level", "namespace", a.Name, "err", err)
		return nil
	}
	pods, ok := list.(*corev1.PodList)
	if !ok {
		return nil
	}
	for _, w := range ExistingPodWarnings(a.Name, policy.Enforce, pods.Items) {
		admission.AddWarning(ctx, w)
	}
	return nil
}

// tightened reports whether the pods need a look under the new enforce level: it changed, is not
// privileged, and is not merely a relaxed level at the same version.
func tightened(now, before LevelVersion) bool {
	if now == before || now.Level == Privileged {
		return false
	}
	rank := map[Level]int{Privileged: 0, Baseline: 1, Restricted: 2}
	return now.Version != before.Version || rank[now.Level] > rank[before.Level]
}

// significantPodUpdate reports whether an update changes what PodSecurity judges: anything in
// the spec but container images, or the AppArmor and seccomp annotations.
func significantPodUpdate(pod, old *corev1.Pod) bool {
	if pod.Annotations[corev1.SeccompPodAnnotationKey] != old.Annotations[corev1.SeccompPodAnnotationKey] {
		return true
	}
	for k, v := range pod.Annotations {
		if (strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) || strings.HasPrefix(k, corev1.SeccompContainerAnnotationKeyPrefix)) &&
			old.Annotations[k] != v {
			return true
		}
	}
	spec := pod.Spec.DeepCopy()
	copyImages := func(dst, src []corev1.Container) {
		for i := range dst {
			if i < len(src) {
				dst[i].Image = src[i].Image
			}
		}
	}
	copyImages(spec.Containers, old.Spec.Containers)
	copyImages(spec.InitContainers, old.Spec.InitContainers)
	for i := range spec.EphemeralContainers {
		if i < len(old.Spec.EphemeralContainers) {
			spec.EphemeralContainers[i].Image = old.Spec.EphemeralContainers[i].Image
		}
	}
	return !apiequality.Semantic.DeepEqual(spec, &old.Spec)
}

// podTemplate is the pod template of a workload object, or nil.
func podTemplate(obj runtime.Object) *corev1.PodTemplateSpec {
	switch o := obj.(type) {
	case *corev1.PodTemplate:
		return &o.Template
	case *corev1.ReplicationController:
		return o.Spec.Template
	case *appsv1.Deployment:
		return &o.Spec.Template
	case *appsv1.ReplicaSet:
		return &o.Spec.Template
	case *appsv1.StatefulSet:
		return &o.Spec.Template
	case *appsv1.DaemonSet:
		return &o.Spec.Template
	case *batchv1.Job:
		return &o.Spec.Template
	case *batchv1.CronJob:
		return &o.Spec.JobTemplate.Spec.Template
	}
	return nil
}
