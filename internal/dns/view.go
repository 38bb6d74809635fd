package dns

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// Index names the View's informers must carry (AddIndexers before they start).
const (
	// IndexServiceIP indexes Services by each of their cluster IPs.
	IndexServiceIP = "dns-cluster-ip"
	// IndexSliceService indexes EndpointSlices by "<namespace>/<service>".
	IndexSliceService = "dns-service"
	// IndexSliceIP indexes EndpointSlices by each endpoint address.
	IndexSliceIP = "dns-endpoint-ip"
)

// ServiceIndexers are the indexers the View needs on the Service informer.
func ServiceIndexers() cache.Indexers {
	return cache.Indexers{IndexServiceIP: func(obj any) ([]string, error) {
		svc, ok := obj.(*corev1.Service)
		if !ok {
			return nil, nil
		}
		var out []string
		for _, ip := range serviceIPs(svc) {
			out = append(out, ip.String())
		}
		return out, nil
	}}
}

// SliceIndexers are the indexers the View needs on the EndpointSlice informer.
func SliceIndexers() cache.Indexers {
	return cache.Indexers{
		IndexSliceService: func(obj any) ([]string, error) {
			s, ok := obj.(*discoveryv1.EndpointSlice)
			if !ok || s.Labels[discoveryv1.LabelServiceName] == "" {
				return nil, nil
			}
			return []string{s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName]}, nil
		},
		IndexSliceIP: func(obj any) ([]string, error) {
			s, ok := obj.(*discoveryv1.EndpointSlice)
			if !ok {
				return nil, nil
			}
			var out []string
			for _, ep := range s.Endpoints {
				for _, a := range ep.Addresses {
					if ip, err := netip.ParseAddr(a); err == nil {
						out = append(out, ip.String())
					}
				}
			}
			return out, nil
		},
	}
}

// View is what Resolve reads: the cluster's Services, EndpointSlices and Namespaces.
type View interface {
	Service(namespace, name string) *corev1.Service
	// Slices are the EndpointSlices of a Service.
	Slices(namespace, service string) []*discoveryv1.EndpointSlice
	NamespaceExists(name string) bool
	// ServicesByIP are the Services with ip among their cluster IPs.
	ServicesByIP(ip netip.Addr) []*corev1.Service
	// SlicesByIP are the EndpointSlices with an endpoint at ip.
	SlicesByIP(ip netip.Addr) []*discoveryv1.EndpointSlice
}

// IndexerView is a View over informer indexers (with ServiceIndexers and SliceIndexers added).
type IndexerView struct {
	Services, EndpointSlices, Namespaces cache.Indexer
}

var _ View = IndexerView{}

// Service implements View.
func (v IndexerView) Service(namespace, name string) *corev1.Service {
	obj, ok, err := v.Services.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil
	}
	svc, _ := obj.(*corev1.Service)
	return svc
}

// Slices implements View.
func (v IndexerView) Slices(namespace, service string) []*discoveryv1.EndpointSlice {
	return slicesOf(v.EndpointSlices, IndexSliceService, namespace+"/"+service)
}

// NamespaceExists implements View.
func (v IndexerView) NamespaceExists(name string) bool {
	_, ok, err := v.Namespaces.GetByKey(name)
	return err == nil && ok
}

// ServicesByIP implements View.
func (v IndexerView) ServicesByIP(ip netip.Addr) []*corev1.Service {
	objs, err := v.Services.ByIndex(IndexServiceIP, ip.String())
	if err != nil {
		return nil
	}
	var out []*corev1.Service
	for _, o := range objs {
		if svc, ok := o.(*corev1.Service); ok {
			out = append(out, svc)
		}
	}
	return out
}

// SlicesByIP implements View.
func (v IndexerView) SlicesByIP(ip netip.Addr) []*discoveryv1.EndpointSlice {
	return slicesOf(v.EndpointSlices, IndexSliceIP, ip.String())
}

func slicesOf(idx cache.Indexer, index, key string) []*discoveryv1.EndpointSlice {
	objs, err := idx.ByIndex(index, key)
	if err != nil {
		return nil
	}
	var out []*discoveryv1.EndpointSlice
	for _, o := range objs {
		if s, ok := o.(*discoveryv1.EndpointSlice); ok {
			out = append(out, s)
		}
	}
	return out
}

// NewIndexerView builds a View over fresh indexers holding objs (Services, EndpointSlices and
// Namespaces); tests and benchmarks use it.
func NewIndexerView(objs ...any) (IndexerView, error) {
	v := IndexerView{
		Services:       cache.NewIndexer(cache.MetaNamespaceKeyFunc, ServiceIndexers()),
		EndpointSlices: cache.NewIndexer(cache.MetaNamespaceKeyFunc, SliceIndexers()),
		Namespaces:     cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
	}
	for _, o := range objs {
		var err error
		switch o.(type) {
		case *corev1.Service:
			err = v.Services.Add(o)
		case *discoveryv1.EndpointSlice:
			err = v.EndpointSlices.Add(o)
		case *corev1.Namespace:
			err = v.Namespaces.Add(o)
		default:
			err = fmt.Errorf("unexpected %T", o)
		}
		if err != nil {
			return v, fmt.Errorf("add to view: %w", err)
		}
	}
	return v, nil
}
