package limitranger

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
)

// Annotation records the defaults the plugin set on a pod.
const Annotation = "kubernetes.io/limit-ranger"

// Default gives every container of pod the Container defaults of ranges where it states none:
// default limits and default requests, resource by resource, and records them in the pod's
// annotation.
func Default(ranges []corev1.LimitRange, pod *corev1.Pod) {
	notes := fill(ranges, pod)
	if len(notes) > 0 {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[Annotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
	}
}

// DefaultResize is Default on a pod's resize: upstream defaults a resize too (its LimitRanger
// mutates every write it judges), but its resize strategy then keeps only the containers'
// resources of the request, so the annotation is not written; here admission runs after the
// strategy, so it is left out rather than dropped.
func DefaultResize(ranges []corev1.LimitRange, pod *corev1.Pod) {
	fill(ranges, pod)
}

// fill sets the defaults Default describes and returns what it set, in the annotation's words.
func fill(ranges []corev1.LimitRange, pod *corev1.Pod) []string {
	limits, requests := corev1.ResourceList{}, corev1.ResourceList{}
	for _, lr := range ranges {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			for k, v := range item.Default {
				limits[k] = v.DeepCopy()
			}
			for k, v := range item.DefaultRequest {
				requests[k] = v.DeepCopy()
			}
		}
	}
	if len(limits) == 0 && len(requests) == 0 {
		return nil
	}
	var notes []string
	merge := func(c *corev1.Container, what string) {
		var setReq, setLim []string
		fill := func(dst *corev1.ResourceList, defaults corev1.ResourceList, set *[]string) {
			for k, v := range defaults {
				if _, ok := (*dst)[k]; ok {
					continue
				}
				if *dst == nil {
					*dst = corev1.ResourceList{}
				}
				(*dst)[k] = v.DeepCopy()
				*set = append(*set, string(k))
			}
		}
		fill(&c.Resources.Limits, limits, &setLim)
		fill(&c.Resources.Requests, requests, &setReq)
		if len(setReq) > 0 {
			sort.Strings(setReq)
			notes = append(notes, fmt.Sprintf("%s request for %s %s", strings.Join(setReq, ", "), what, c.Name))
		}
		if len(setLim) > 0 {
			sort.Strings(setLim)
			notes = append(notes, fmt.Sprintf("%s limit for %s %s", strings.Join(setLim, ", "), what, c.Name))
		}
	}
	for i := range pod.Spec.Containers {
		merge(&pod.Spec.Containers[i], "container")
	}
	for i := range pod.Spec.InitContainers {
		merge(&pod.Spec.InitContainers[i], "init container")
	}
	return notes
}

// milli compares quantities at a common precision, as upstream: milli-units where they fit.
func milli(qs ...resource.Quantity) []int64 {
	out := make([]int64, len(qs))
	fits := true
	for i, q := range qs {
		out[i] = q.Value()
		fits = fits && out[i] <= resource.MaxMilliValue
	}
	if fits {
		for i, q := range qs {
			out[i] = q.MilliValue()
		}
	}
	return out
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for k := range l {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// bounds checks requests and limits against an item's min, max and maxLimitRequestRatio. Claims
// have no limits: their max bounds the request (requestOnly).
func bounds(item corev1.LimitRangeItem, req, lim corev1.ResourceList, requestOnly bool) []error {
	var errs []error
	typ := string(item.Type)
	for _, k := range sortedNames(item.Min) {
		min := item.Min[k]
		r, hasReq := req[k]
		l, hasLim := lim[k]
		v := milli(r, l, min)
		switch {
		case !hasReq:
			errs = append(errs, fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", k, typ, min.String()))
		case v[0] < v[2]:
			errs = append(errs, fmt.Errorf("minimum %s usage per %s is %s, but request is %s", k, typ, min.String(), r.String()))
		case hasLim && v[1] < v[2]:
			errs = append(errs, fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", k, typ, min.String(), l.String()))
		}
	}
	for _, k := range sortedNames(item.Max) {
		max := item.Max[k]
		r, hasReq := req[k]
		l, hasLim := lim[k]
		v := milli(r, l, max)
		if requestOnly {
			switch {
			case !hasReq:
				errs = append(errs, fmt.Errorf("maximum %s usage per %s is %s.  No request is specified", k, typ, max.String()))
			case v[0] > v[2]:
				errs = append(errs, fmt.Errorf("maximum %s usage per %s is %s, but request is %s", k, typ, max.String(), r.String()))
			}
			continue
		}
		switch {
		case !hasLim:
			errs = append(errs, fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", k, typ, max.String()))
		case v[1] > v[2]:
			errs = append(errs, fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", k, typ, max.String(), l.String()))
		case hasReq && v[0] > v[2]:
			errs = append(errs, fmt.Errorf("maximum %s usage per %s is %s, but request is %s", k, typ, max.String(), r.String()))
		}
	}
	for _, k := range sortedNames(item.MaxLimitRequestRatio) {
		ratio := item.MaxLimitRequestRatio[k]
		r, hasReq := req[k]
		l, hasLim := lim[k]
		v := milli(r, l, ratio)
		switch {
		case !hasReq || v[0] == 0:
			errs = append(errs, fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", k, typ, ratio.String()))
		case !hasLim || v[1] == 0:
			errs = append(errs, fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", k, typ, ratio.String()))
		default:
			observed := float64(v[1]) / float64(v[0])
			maxRatio := float64(ratio.Value())
			scaled := observed
			if ratio.Value() <= resource.MaxMilliValue {
				scaled, maxRatio = observed*1000, float64(ratio.MilliValue())
			}
			if scaled > maxRatio {
				errs = append(errs, fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", k, typ, ratio.String(), observed))
			}
		}
	}
	return errs
}

// podTotals are a pod's requests or limits as a whole: its containers' sum, at least any one init
// container's (sidecars, restartable init containers, add up with the containers).
func podTotals(pod *corev1.Pod, limits bool) corev1.ResourceList {
	of := func(c *corev1.Container) corev1.ResourceList {
		if limits {
			return c.Resources.Limits
		}
		return c.Resources.Requests
	}
	add := func(dst, src corev1.ResourceList) {
		for k, v := range src {
			sum := dst[k].DeepCopy()
			sum.Add(v)
			dst[k] = sum
		}
	}
	total, sidecars, initMax := corev1.ResourceList{}, corev1.ResourceList{}, corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		add(total, of(&pod.Spec.Containers[i]))
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		this := corev1.ResourceList{}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(total, of(c))
			add(sidecars, of(c))
			add(this, sidecars)
		} else {
			add(this, of(c))
			add(this, sidecars)
		}
		for k, v := range this {
			if cur, ok := initMax[k]; !ok || v.Cmp(cur) > 0 {
				initMax[k] = v.DeepCopy()
			}
		}
	}
	for k, v := range initMax {
		if cur, ok := total[k]; !ok || v.Cmp(cur) > 0 {
			total[k] = v.DeepCopy()
		}
	}
	return total
}

// CheckPod is every Container and Pod bound of ranges the pod breaks.
func CheckPod(ranges []corev1.LimitRange, pod *corev1.Pod) error {
	var errs []error
	for _, lr := range ranges {
		for _, item := range lr.Spec.Limits {
			switch item.Type {
			case corev1.LimitTypeContainer:
				for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
					for i := range cs {
						errs = append(errs, bounds(item, cs[i].Resources.Requests, cs[i].Resources.Limits, false)...)
					}
				}
			case corev1.LimitTypePod:
				errs = append(errs, bounds(item, podTotals(pod, false), podTotals(pod, true), false)...)
			}
		}
	}
	return utilerrors.NewAggregate(errs)
}

// CheckClaim is every PersistentVolumeClaim bound of ranges the claim's storage request breaks.
func CheckClaim(ranges []corev1.LimitRange, pvc *corev1.PersistentVolumeClaim) error {
	var errs []error
	for _, lr := range ranges {
		for _, item := range lr.Spec.Limits {
			if item.Type == corev1.LimitTypePersistentVolumeClaim {
				item.MaxLimitRequestRatio = nil
				errs = append(errs, bounds(item, pvc.Spec.Resources.Requests, nil, true)...)
			}
		}
	}
	return utilerrors.NewAggregate(errs)
}

// Plugin is the LimitRanger admission plugin.
type Plugin struct{ log *slog.Logger }

var _ admission.Plugin = &Plugin{}

// New builds the plugin.
func New(log *slog.Logger) *Plugin {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Plugin{log: log}
}

// Name is Kubernetes' plugin name.
func (*Plugin) Name() string { return "LimitRanger" }

var (
	podsGR   = schema.GroupResource{Resource: "pods"}
	claimsGR = schema.GroupResource{Resource: "persistentvolumeclaims"}
)

// handles reports whether LimitRanger looks at the write, as upstream: pod creates and resizes
// (pods/resize, the one subresource; other pod updates cannot change resources), claim creates
// and updates; never a write to an object being deleted.
func handles(a *admission.Attributes) bool {
	if a.Namespace == "" {
		return false
	}
	if a.OldObject != nil {
		if m, err := meta.Accessor(a.OldObject); err == nil && m.GetDeletionTimestamp() != nil {
			return false
		}
	}
	switch a.Resource.GroupResource() {
	case podsGR:
		return (a.Verb == "create" && a.Subresource == "") || (a.Verb == "update" && a.Subresource == "resize")
	case claimsGR:
		return a.Subresource == "" && (a.Verb == "create" || a.Verb == "update")
	}
	return false
}

func (p *Plugin) ranges(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) ([]corev1.LimitRange, error) {
	obj, err := lookup.List(ctx, "", "limitranges", a.Namespace)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("list limit ranges in %s: %w", a.Namespace, err))
	}
	list, ok := obj.(*corev1.LimitRangeList)
	if !ok {
		return nil, nil
	}
	return list.Items, nil
}

// Admit applies the namespace's container defaults to a new or resized pod.
func (p *Plugin) Admit(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) error {
	if !handles(a) || a.Resource.GroupResource() != podsGR {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	ranges, err := p.ranges(ctx, a, lookup)
	if err != nil {
		return err
	}
	if a.Subresource == "resize" {
		DefaultResize(ranges, pod)
		return nil
	}
	Default(ranges, pod)
	return nil
}

// Validate refuses pods (created or resized) and claims outside the namespace's bounds.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) error {
	if !handles(a) {
		return nil
	}
	ranges, err := p.ranges(ctx, a, lookup)
	if err != nil || len(ranges) == 0 {
		return err
	}
	switch o := a.Object.(type) {
	case *corev1.Pod:
		err = CheckPod(ranges, o)
	case *corev1.PersistentVolumeClaim:
		err = CheckClaim(ranges, o)
	}
	if err != nil {
		return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, err)
	}
	return nil
}
