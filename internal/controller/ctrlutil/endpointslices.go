package ctrlutil

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// DesiredSlice is one EndpointSlice a controller wants: its address type, port set and endpoints
// (already chunked to the controller's maximum per slice).
type DesiredSlice struct {
	AddressType discoveryv1.AddressType
	Ports       []discoveryv1.EndpointPort
	Endpoints   []discoveryv1.Endpoint
}

// SliceKey identifies the slices that may be reused for one another: same address type, same ports.
func SliceKey(addressType discoveryv1.AddressType, ports []discoveryv1.EndpointPort) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = ptr.Deref(p.Name, "") + "/" + string(ptr.Deref(p.Protocol, "")) + "/" + strconv.Itoa(int(ptr.Deref(p.Port, 0))) + "/" + ptr.Deref(p.AppProtocol, "")
	}
	return string(addressType) + "|" + strings.Join(parts, ",")
}

// SliceSet is everything a controller owns for one source object (a Service, or mirrored Endpoints):
// the slices it wants, the metadata they carry, and the slices it owns now.
type SliceSet struct {
	Namespace string
	// GenerateName prefixes new slices' names ("<service>-").
	GenerateName string
	Labels       map[string]string
	// Annotations, when not nil, are kept equal on every slice; nil leaves slices' annotations alone.
	Annotations map[string]string
	Owner       *metav1.OwnerReference
	Want        []DesiredSlice
	// Owned are the slices the controller owns for this source, in a stable order (by name), so
	// that which slice is reused for which desired one does not change between syncs.
	Owned []*discoveryv1.EndpointSlice
	// Tracker, when set, remembers the writes under Source and refuses (ErrStaleSlices) to act on
	// Owned while it lacks the last ones.
	Tracker *SliceTracker
	Source  string
}

// record tells the tracker, if any, of a write.
func (set SliceSet) record(name string, w SliceWrite) {
	if set.Tracker != nil {
		set.Tracker.written(set.Source, name, w)
	}
}

// ReconcileSlices makes the owned slices match the wanted ones with the fewest writes: a slice of
// the same address type and ports is reused (updated only when its endpoints or metadata differ),
// missing ones are created, left-over ones deleted. Errors are joined, so one failed write does not
// stop the others.
func ReconcileSlices(ctx context.Context, client kubernetes.Interface, set SliceSet) error {
	if set.Tracker != nil && set.Tracker.Stale(set.Source, set.Owned) {
		return ErrStaleSlices
	}
	slices := client.DiscoveryV1().EndpointSlices(set.Namespace)
	reusable := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range set.Owned {
		k := SliceKey(s.AddressType, s.Ports)
		reusable[k] = append(reusable[k], s)
	}
	var errs []error
	for _, d := range set.Want {
		k := SliceKey(d.AddressType, d.Ports)
		if candidates := reusable[k]; len(candidates) > 0 {
			s := candidates[0]
			reusable[k] = candidates[1:]
			annotationsEqual := set.Annotations == nil || maps.Equal(s.Annotations, set.Annotations)
			if apiequality.Semantic.DeepEqual(s.Endpoints, d.Endpoints) && maps.Equal(s.Labels, set.Labels) && annotationsEqual {
				continue
			}
			updated := s.DeepCopy()
			updated.Endpoints = d.Endpoints
			updated.Labels = maps.Clone(set.Labels)
			if set.Annotations != nil {
				updated.Annotations = maps.Clone(set.Annotations)
			}
			out, err := slices.Update(ctx, updated, metav1.UpdateOptions{})
			if err != nil {
				errs = append(errs, fmt.Errorf("update endpointslice %s/%s: %w", set.Namespace, s.Name, err))
			} else {
				set.record(out.Name, SliceWrite{ResourceVersion: out.ResourceVersion})
			}
			continue
		}
		slice := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				GenerateName:    set.GenerateName,
				Namespace:       set.Namespace,
				Labels:          maps.Clone(set.Labels),
				Annotations:     maps.Clone(set.Annotations),
				OwnerReferences: []metav1.OwnerReference{*set.Owner},
			},
			AddressType: d.AddressType,
			Endpoints:   d.Endpoints,
			Ports:       d.Ports,
		}
		out, err := slices.Create(ctx, slice, metav1.CreateOptions{})
		switch {
		case err == nil:
			set.record(out.Name, SliceWrite{ResourceVersion: out.ResourceVersion})
		case !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			errs = append(errs, fmt.Errorf("create endpointslice %s*: %w", set.GenerateName, err))
		}
	}
	for _, rest := range reusable {
		for _, s := range rest {
			err := slices.Delete(ctx, s.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete endpointslice %s/%s: %w", set.Namespace, s.Name, err))
			} else {
				set.record(s.Name, SliceWrite{Deleted: true})
			}
		}
	}
	return errors.Join(errs...)
}
