package endpointslicemirroring

//lint:file-ignore SA1019 core/v1 Endpoints are deprecated, not removed: this controller mirrors them.

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"sort"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "endpointslicemirroring"

// ManagedBy is the managed-by label value of the slices this controller owns.
const ManagedBy = "endpointslicemirroring-controller.k8s.io"

// MaxEndpointsPerSubset is Kubernetes' default --mirroring-max-endpoints-per-subset: addresses of a
// subset beyond it are not mirrored.
const MaxEndpointsPerSubset = 1000

const (
	// skipMirrorLabel set to "true" on Endpoints keeps them out of slices (the API server's own
	// "kubernetes" Endpoints carry it; their slice is written directly).
	skipMirrorLabel = discoveryv1.LabelSkipMirror
	// leaderAnnotation marks Endpoints used as an old-style leader-election lock, never mirrored.
	leaderAnnotation = "control-plane.alpha.kubernetes.io/leader"
)

// droppedAnnotations are not copied onto slices, as upstream drops them.
var droppedAnnotations = []string{corev1.EndpointsLastChangeTriggerTime, corev1.LastAppliedConfigAnnotation}

// Controller mirrors Endpoints into EndpointSlices.
type Controller struct {
	client      kubernetes.Interface
	epLister    corelisters.EndpointsLister
	svcLister   corelisters.ServiceLister
	sliceLister discoverylisters.EndpointSliceLister
	// tracker holds back a sync whose slice cache lacks the controller's own last writes.
	tracker *ctrlutil.SliceTracker
	loop    *ctrlutil.Loop
	synced  []cache.InformerSynced
}

// New builds the controller and registers its informers' handlers. Endpoints, their Service and
// mirrored slices all enqueue the same key: namespace/name of the Endpoints (and Service).
func New(deps ctrlutil.Deps) (*Controller, error) {
	epInformer := deps.Informers.Core().V1().Endpoints()
	svcInformer := deps.Informers.Core().V1().Services()
	sliceInformer := deps.Informers.Discovery().V1().EndpointSlices()
	c := &Controller{
		client:      deps.Client,
		epLister:    epInformer.Lister(),
		svcLister:   svcInformer.Lister(),
		sliceLister: sliceInformer.Lister(),
		tracker:     ctrlutil.NewSliceTracker(),
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	byKey := ctrlutil.On(ctrlutil.OnAll, c.loop.Enqueue)
	enqueueSliceService, sliceDeleted := c.loop.EnqueueSliceService(ManagedBy), c.tracker.SliceDeleted(ManagedBy)
	var err error
	c.synced, err = ctrlutil.NewWiring(Name).
		Watch(epInformer.Informer(), byKey).
		Watch(svcInformer.Informer(), byKey).
		Watch(sliceInformer.Informer(), cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, obj any) { enqueueSliceService(obj) },
			DeleteFunc: func(obj any) { sliceDeleted(obj); enqueueSliceService(obj) },
		}).
		Done()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced...) }

// ShouldMirror reports whether ep is mirrored: its Service exists and has no selector (a selector
// means the endpointslice controller writes the slices), and ep is neither marked skip-mirror nor a
// leader-election lock.
func ShouldMirror(ep *corev1.Endpoints, svc *corev1.Service) bool {
	if ep == nil || svc == nil || svc.Spec.Selector != nil {
		return false
	}
	if ep.Labels[skipMirrorLabel] == "true" {
		return false
	}
	_, leader := ep.Annotations[leaderAnnotation]
	return !leader
}

// DesiredSlices computes the slices that mirror ep: subsets with the same ports share slices, one
// per address type; ready addresses are Ready endpoints and not-ready ones are not; addresses that
// are not IPs are skipped, as are a subset's addresses past MaxEndpointsPerSubset. maxPerSlice
// chunks each group.
func DesiredSlices(ep *corev1.Endpoints, maxPerSlice int) []ctrlutil.DesiredSlice {
	type group struct {
		addressType discoveryv1.AddressType
		ports       []discoveryv1.EndpointPort
		endpoints   []discoveryv1.Endpoint
	}
	groups := map[string]*group{}
	var order []string
	for _, subset := range ep.Subsets {
		ports := make([]discoveryv1.EndpointPort, 0, len(subset.Ports))
		for _, p := range subset.Ports {
			ports = append(ports, discoveryv1.EndpointPort{Name: &p.Name, Port: &p.Port, Protocol: &p.Protocol, AppProtocol: p.AppProtocol})
		}
		added := 0
		add := func(addresses []corev1.EndpointAddress, ready bool) {
			for _, a := range addresses {
				if added >= MaxEndpointsPerSubset {
					return
				}
				addressType, ok := addressTypeOf(a.IP)
				if !ok {
					continue
				}
				key := ctrlutil.SliceKey(addressType, ports)
				g := groups[key]
				if g == nil {
					g = &group{addressType: addressType, ports: ports}
					groups[key] = g
					order = append(order, key)
				}
				g.endpoints = append(g.endpoints, endpointFor(a, ready))
				added++
			}
		}
		add(subset.Addresses, true)
		add(subset.NotReadyAddresses, false)
	}
	sort.Strings(order)
	var out []ctrlutil.DesiredSlice
	for _, key := range order {
		g := groups[key]
		for start := 0; start < len(g.endpoints); start += maxPerSlice {
			end := min(start+maxPerSlice, len(g.endpoints))
			out = append(out, ctrlutil.DesiredSlice{AddressType: g.addressType, Ports: g.ports, Endpoints: g.endpoints[start:end]})
		}
	}
	return out
}

func addressTypeOf(ip string) (discoveryv1.AddressType, bool) {
	addr, err := netip.ParseAddr(ip)
	switch {
	case err != nil:
		return "", false
	case addr.Is4():
		return discoveryv1.AddressTypeIPv4, true
	default:
		return discoveryv1.AddressTypeIPv6, true
	}
}

func endpointFor(a corev1.EndpointAddress, ready bool) discoveryv1.Endpoint {
	ep := discoveryv1.Endpoint{
		Addresses:  []string{a.IP},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		TargetRef:  a.TargetRef,
		NodeName:   a.NodeName,
	}
	if a.Hostname != "" {
		ep.Hostname = &a.Hostname
	}
	return ep
}

// sliceMeta is the mirrored slices' labels and annotations: the Endpoints' own, with the
// service-name and managed-by labels set and the change-tracking annotations dropped.
func sliceMeta(ep *corev1.Endpoints) (map[string]string, map[string]string) {
	lbls := maps.Clone(ep.Labels)
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[discoveryv1.LabelServiceName] = ep.Name
	lbls[discoveryv1.LabelManagedBy] = ManagedBy
	annotations := maps.Clone(ep.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	for _, a := range droppedAnnotations {
		delete(annotations, a)
	}
	return lbls, annotations
}

// Sync mirrors the Endpoints with the given key, or removes their mirrored slices when they are
// gone or no longer to be mirrored.
func (c *Controller) Sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	owned, err := c.sliceLister.EndpointSlices(namespace).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ManagedBy}))
	if err != nil {
		return fmt.Errorf("list mirrored endpointslices of %s: %w", key, err)
	}
	sort.Slice(owned, func(i, j int) bool { return owned[i].Name < owned[j].Name })
	ep, err := c.epLister.Endpoints(namespace).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("get endpoints %s: %w", key, err)
	}
	svc, err := c.svcLister.Services(namespace).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("get service %s: %w", key, err)
	}
	set := ctrlutil.SliceSet{Namespace: namespace, GenerateName: name + "-", Owned: owned, Tracker: c.tracker, Source: key}
	if ep != nil && svc != nil && ShouldMirror(ep, svc) {
		set.Labels, set.Annotations = sliceMeta(ep)
		set.Owner = ctrlutil.NewControllerRef(ep, corev1.SchemeGroupVersion.WithKind("Endpoints"))
		set.Want = DesiredSlices(ep, MaxEndpointsPerSubset)
	}
	// With nothing wanted, every mirrored slice is deleted.
	return ctrlutil.ReconcileSlices(ctx, c.client, set)
}
