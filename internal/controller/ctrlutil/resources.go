package ctrlutil

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
)

// APIResource is one served resource (preferred version), as discovery lists it.
type APIResource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	Verbs      sets.Set[string]
}

// DiscoverFunc lists the served resources. On partial failure it returns what
// it found together with the error, so callers can act on the rest.
type DiscoverFunc func(ctx context.Context) ([]APIResource, error)

// Discovery lists the server's preferred resources, without subresources.
func Discovery(d discovery.DiscoveryInterface) DiscoverFunc {
	return func(context.Context) ([]APIResource, error) {
		lists, err := discovery.ServerPreferredResources(d)
		if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
			return nil, fmt.Errorf("discover resources: %w", err)
		}
		return FromResourceLists(lists), err
	}
}

// FromResourceLists flattens discovery lists, dropping subresources.
func FromResourceLists(lists []*metav1.APIResourceList) []APIResource {
	var out []APIResource
	for _, list := range lists {
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			out = append(out, APIResource{GVR: gv.WithResource(r.Name), Kind: r.Kind, Namespaced: r.Namespaced, Verbs: sets.New(r.Verbs...)})
		}
	}
	return out
}
