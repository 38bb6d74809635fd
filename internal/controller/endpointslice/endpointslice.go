package endpointslice

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "endpointslice"

// ManagedBy is the managed-by label value of the slices this controller owns.
const ManagedBy = "endpointslice-controller.k8s.io"

// MaxEndpointsPerSlice is Kubernetes' default --max-endpoints-per-slice.
const MaxEndpointsPerSlice = 100

const headlessLabel = "service.kubernetes.io/headless"

// Controller reconciles EndpointSlices.
type Controller struct {
	client      kubernetes.Interface
	svcLister   corelisters.ServiceLister
	podLister   corelisters.PodLister
	sliceLister discoverylisters.EndpointSliceLister
	// tracker holds back a sync whose slice cache lacks the controller's own last writes.
	tracker *ctrlutil.SliceTracker
	loop    *ctrlutil.Loop
	synced  []cache.InformerSynced
}

// New builds the controller and registers its informers' handlers.
func New(deps ctrlutil.Deps) (*Controller, error) {
	svcInformer := deps.Informers.Core().V1().Services()
	podInformer := deps.Informers.Core().V1().Pods()
	sliceInformer := deps.Informers.Discovery().V1().EndpointSlices()
	c := &Controller{
		client:      deps.Client,
		svcLister:   svcInformer.Lister(),
		podLister:   podInformer.Lister(),
		sliceLister: sliceInformer.Lister(),
		tracker:     ctrlutil.NewSliceTracker(),
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	enqueueSliceService := c.loop.EnqueueSliceService(ManagedBy)
	var err error
	c.synced, err = ctrlutil.NewWiring(Name).
		Watch(svcInformer.Informer(), ctrlutil.On(ctrlutil.OnAll, c.loop.Enqueue)).
		Watch(podInformer.Informer(), c.loop.PodServiceHandlers(c.svcLister)).
		Watch(sliceInformer.Informer(), cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, obj any) { enqueueSliceService(obj) },
			DeleteFunc: func(obj any) { c.sliceDeleted(obj); enqueueSliceService(obj) },
		}).
		Done()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// sliceDeleted settles what the tracker expected of a slice the informer saw go.
func (c *Controller) sliceDeleted(obj any) { c.tracker.SliceDeleted(ManagedBy)(obj) }

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced...) }

// group is one address type and port set: the endpoints that share them.
type group struct {
	addressType discoveryv1.AddressType
	ports       []discoveryv1.EndpointPort
	endpoints   []discoveryv1.Endpoint
}

func (g *group) key() string { return ctrlutil.SliceKey(g.addressType, g.ports) }

// DesiredGroups computes the endpoints of svc over its selected pods,
// grouped by address type and resolved ports, sorted for stable output.
func DesiredGroups(svc *corev1.Service, pods []*corev1.Pod) []*group {
	groups := map[string]*group{}
	for _, pod := range pods {
		if !ctrlutil.ShouldPodBeInEndpoints(pod, true) {
			continue
		}
		var ports []discoveryv1.EndpointPort
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			port, ok := ctrlutil.ResolveTargetPort(sp, pod)
			if !ok {
				continue
			}
			protocol := sp.Protocol
			if protocol == "" {
				protocol = corev1.ProtocolTCP
			}
			ports = append(ports, discoveryv1.EndpointPort{Name: ptr.To(sp.Name), Port: ptr.To(port), Protocol: ptr.To(protocol), AppProtocol: sp.AppProtocol})
		}
		if len(svc.Spec.Ports) > 0 && len(ports) == 0 {
			continue
		}
		sort.Slice(ports, func(i, j int) bool { return *ports[i].Name < *ports[j].Name })
		addressType := discoveryv1.AddressTypeIPv4
		if strings.Contains(pod.Status.PodIP, ":") {
			addressType = discoveryv1.AddressTypeIPv6
		}
		g := &group{addressType: addressType, ports: ports}
		if existing, ok := groups[g.key()]; ok {
			g = existing
		} else {
			groups[g.key()] = g
		}
		ep := discoveryv1.Endpoint{
			Addresses:  []string{pod.Status.PodIP},
			Conditions: Conditions(svc, pod),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		}
		if pod.Spec.NodeName != "" {
			ep.NodeName = ptr.To(pod.Spec.NodeName)
		}
		if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name {
			ep.Hostname = ptr.To(pod.Spec.Hostname)
		}
		g.endpoints = append(g.endpoints, ep)
	}
	out := make([]*group, 0, len(groups))
	for _, g := range groups {
		sort.Slice(g.endpoints, func(i, j int) bool { return g.endpoints[i].Addresses[0] < g.endpoints[j].Addresses[0] })
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out
}

// Conditions are the endpoint conditions of pod behind svc, as Kubernetes sets them:
// serving is the pod's readiness and nothing else, so a proxy can tell a terminating pod
// that still serves from one that does not; terminating is a deletionTimestamp; ready is
// serving and not terminating (a terminating pod is never ready, for the clients that read
// only ready), except that publishNotReadyAddresses makes every endpoint ready.
func Conditions(svc *corev1.Service, pod *corev1.Pod) discoveryv1.EndpointConditions {
	serving := ctrlutil.IsPodReady(pod)
	terminating := pod.DeletionTimestamp != nil
	return discoveryv1.EndpointConditions{
		Ready:       ptr.To(svc.Spec.PublishNotReadyAddresses || (serving && !terminating)),
		Serving:     ptr.To(serving),
		Terminating: ptr.To(terminating),
	}
}

// Sync reconciles the EndpointSlices of the Service with the given key.
func (c *Controller) Sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.svcLister.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.tracker.Forget(key)
		return nil // owner references let the garbage collector remove our slices
	}
	if err != nil {
		return fmt.Errorf("get service %s: %w", key, err)
	}
	if len(svc.Spec.Selector) == 0 || svc.DeletionTimestamp != nil {
		return nil
	}
	pods, err := c.podLister.Pods(namespace).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return fmt.Errorf("list pods for service %s: %w", key, err)
	}
	existing, err := c.sliceLister.EndpointSlices(namespace).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ManagedBy}))
	if err != nil {
		return fmt.Errorf("list endpointslices of %s: %w", key, err)
	}
	// The cache must show this controller's last writes first, whoever owns the slices now.
	if c.tracker.Stale(key, existing) {
		return ctrlutil.ErrStaleSlices
	}
	var owned []*discoveryv1.EndpointSlice
	for _, s := range existing {
		if ref := metav1.GetControllerOf(s); ref != nil && ref.UID == svc.UID {
			owned = append(owned, s)
		}
	}
	sort.Slice(owned, func(i, j int) bool { return owned[i].Name < owned[j].Name })

	wantLabels := maps.Clone(svc.Labels)
	if wantLabels == nil {
		wantLabels = map[string]string{}
	}
	wantLabels[discoveryv1.LabelServiceName] = name
	wantLabels[discoveryv1.LabelManagedBy] = ManagedBy
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		wantLabels[headlessLabel] = ""
	}

	// The desired slices: each group chunked; an empty placeholder if nothing.
	var want []ctrlutil.DesiredSlice
	for _, g := range DesiredGroups(svc, pods) {
		for start := 0; start < len(g.endpoints); start += MaxEndpointsPerSlice {
			end := min(start+MaxEndpointsPerSlice, len(g.endpoints))
			want = append(want, ctrlutil.DesiredSlice{AddressType: g.addressType, Ports: g.ports, Endpoints: g.endpoints[start:end]})
		}
	}
	if len(want) == 0 {
		want = append(want, ctrlutil.DesiredSlice{AddressType: discoveryv1.AddressTypeIPv4})
	}
	return ctrlutil.ReconcileSlices(ctx, c.client, ctrlutil.SliceSet{
		Namespace:    namespace,
		GenerateName: name + "-",
		Labels:       wantLabels,
		Owner:        ctrlutil.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service")),
		Want:         want,
		Owned:        owned,
		Tracker:      c.tracker,
		Source:       key,
	})
}
