package endpoint

//lint:file-ignore SA1019 core/v1 Endpoints are deprecated, not removed: Kubernetes still serves them and so does skiff.

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "endpoint"

// HeadlessLabel marks the Endpoints of a headless Service.
const HeadlessLabel = "service.kubernetes.io/headless"

// Controller reconciles Endpoints.
type Controller struct {
	client    kubernetes.Interface
	svcLister corelisters.ServiceLister
	podLister corelisters.PodLister
	epLister  corelisters.EndpointsLister
	loop      *ctrlutil.Loop
	synced    []cache.InformerSynced
}

// New builds the controller and registers its informers' handlers.
func New(deps ctrlutil.Deps) (*Controller, error) {
	svcInformer := deps.Informers.Core().V1().Services()
	podInformer := deps.Informers.Core().V1().Pods()
	epInformer := deps.Informers.Core().V1().Endpoints()
	c := &Controller{
		client:    deps.Client,
		svcLister: svcInformer.Lister(),
		podLister: podInformer.Lister(),
		epLister:  epInformer.Lister(),
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	var err error
	c.synced, err = ctrlutil.NewWiring(Name).
		Watch(svcInformer.Informer(), ctrlutil.On(ctrlutil.OnAll, c.loop.Enqueue)).
		Watch(podInformer.Informer(), c.loop.PodServiceHandlers(c.svcLister)).
		// Someone else changed or deleted our Endpoints: put them back. Endpoints with no Service
		// of their name are someone else's (written by hand, as conformance's Endpoints lifecycle
		// spec does): a change to them is not ours to undo, and reconciling would delete them.
		Watch(epInformer.Informer(), cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, o any) { c.endpointsUpdated(o) }, DeleteFunc: c.loop.Enqueue}).
		Done()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// endpointsUpdated queues the Service of changed Endpoints, when there is one.
func (c *Controller) endpointsUpdated(o any) {
	if ep, ok := o.(*corev1.Endpoints); ok {
		if _, err := c.svcLister.Services(ep.Namespace).Get(ep.Name); err != nil {
			return
		}
	}
	c.loop.Enqueue(o)
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced...) }

// Sync reconciles the Endpoints of the Service with the given key.
func (c *Controller) Sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.svcLister.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		// The Service is gone: so are its Endpoints (if we made them).
		err := c.client.CoreV1().Endpoints(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete endpoints %s: %w", key, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get service %s: %w", key, err)
	}
	if len(svc.Spec.Selector) == 0 {
		return nil
	}
	pods, err := c.podLister.Pods(namespace).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return fmt.Errorf("list pods for service %s: %w", key, err)
	}
	subsets := BuildSubsets(svc, pods)

	wantLabels := maps.Clone(svc.Labels)
	if wantLabels == nil {
		wantLabels = map[string]string{}
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		wantLabels[HeadlessLabel] = ""
	} else {
		delete(wantLabels, HeadlessLabel)
	}

	current, err := c.epLister.Endpoints(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: wantLabels}, Subsets: subsets}
		if _, err := c.client.CoreV1().Endpoints(namespace).Create(ctx, ep, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil
			}
			return fmt.Errorf("create endpoints %s: %w", key, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get endpoints %s: %w", key, err)
	}
	if apiequality.Semantic.DeepEqual(current.Subsets, subsets) && labelsEqual(current.Labels, wantLabels) {
		return nil
	}
	ep := current.DeepCopy()
	ep.Subsets = subsets
	ep.Labels = wantLabels
	if _, err := c.client.CoreV1().Endpoints(namespace).Update(ctx, ep, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update endpoints %s: %w", key, err)
	}
	return nil
}

func labelsEqual(a, b map[string]string) bool {
	return len(a) == len(b) && maps.Equal(a, b)
}

// BuildSubsets computes the Endpoints subsets of svc over its selected pods:
// one subset per distinct set of resolved ports, addresses sorted by IP.
func BuildSubsets(svc *corev1.Service, pods []*corev1.Pod) []corev1.EndpointSubset {
	type group struct {
		ports           []corev1.EndpointPort
		ready, notReady []corev1.EndpointAddress
	}
	groups := map[string]*group{}
	for _, pod := range pods {
		// A terminating pod is listed only under publishNotReadyAddresses, then (as every
		// address of such a Service) as ready: Endpoints have no terminating state.
		if !ctrlutil.ShouldPodBeInEndpoints(pod, svc.Spec.PublishNotReadyAddresses) {
			continue
		}
		var ports []corev1.EndpointPort
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
			ports = append(ports, corev1.EndpointPort{Name: sp.Name, Port: port, Protocol: protocol, AppProtocol: sp.AppProtocol})
		}
		// A service without ports still lists its pods (headless DNS).
		if len(svc.Spec.Ports) > 0 && len(ports) == 0 {
			continue
		}
		sort.Slice(ports, func(i, j int) bool { return ports[i].Name < ports[j].Name })
		key := portsKey(ports)
		g, ok := groups[key]
		if !ok {
			g = &group{ports: ports}
			groups[key] = g
		}
		addr := corev1.EndpointAddress{
			IP:        pod.Status.PodIP,
			NodeName:  nodeNameOf(pod),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		}
		if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && svc.Namespace == pod.Namespace {
			addr.Hostname = pod.Spec.Hostname
		}
		if svc.Spec.PublishNotReadyAddresses || ctrlutil.IsPodReady(pod) {
			g.ready = append(g.ready, addr)
		} else {
			g.notReady = append(g.notReady, addr)
		}
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var subsets []corev1.EndpointSubset
	for _, k := range keys {
		g := groups[k]
		byIP := func(a []corev1.EndpointAddress) { sort.Slice(a, func(i, j int) bool { return a[i].IP < a[j].IP }) }
		byIP(g.ready)
		byIP(g.notReady)
		subsets = append(subsets, corev1.EndpointSubset{Addresses: g.ready, NotReadyAddresses: g.notReady, Ports: g.ports})
	}
	return subsets
}

func nodeNameOf(pod *corev1.Pod) *string {
	if pod.Spec.NodeName == "" {
		return nil
	}
	n := pod.Spec.NodeName
	return &n
}

func portsKey(ports []corev1.EndpointPort) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = p.Name + "/" + string(p.Protocol) + "/" + strconv.Itoa(int(p.Port))
	}
	return strings.Join(parts, ",")
}
