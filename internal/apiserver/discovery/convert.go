package discovery

import (
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// toV2beta1 converts the aggregated document to apidiscovery.k8s.io/v2beta1, which has the same
// fields as v2 (v2 is its promotion).
func toV2beta1(in apidiscoveryv2.APIGroupDiscoveryList) *apidiscoveryv2beta1.APIGroupDiscoveryList {
	out := &apidiscoveryv2beta1.APIGroupDiscoveryList{
		TypeMeta: metav1.TypeMeta{Kind: aggregatedKind, APIVersion: discoveryGroup + "/v2beta1"},
		Items:    make([]apidiscoveryv2beta1.APIGroupDiscovery, 0, len(in.Items)),
	}
	for _, group := range in.Items {
		g := apidiscoveryv2beta1.APIGroupDiscovery{ObjectMeta: group.ObjectMeta}
		for _, version := range group.Versions {
			v := apidiscoveryv2beta1.APIVersionDiscovery{
				Version:   version.Version,
				Freshness: apidiscoveryv2beta1.DiscoveryFreshness(version.Freshness),
			}
			for _, resource := range version.Resources {
				r := apidiscoveryv2beta1.APIResourceDiscovery{
					Resource:         resource.Resource,
					ResponseKind:     resource.ResponseKind,
					Scope:            apidiscoveryv2beta1.ResourceScope(resource.Scope),
					SingularResource: resource.SingularResource,
					Verbs:            resource.Verbs,
					ShortNames:       resource.ShortNames,
					Categories:       resource.Categories,
				}
				for _, sub := range resource.Subresources {
					r.Subresources = append(r.Subresources, apidiscoveryv2beta1.APISubresourceDiscovery{
						Subresource:   sub.Subresource,
						ResponseKind:  sub.ResponseKind,
						AcceptedTypes: sub.AcceptedTypes,
						Verbs:         sub.Verbs,
					})
				}
				v.Resources = append(v.Resources, r)
			}
			g.Versions = append(g.Versions, v)
		}
		out.Items = append(out.Items, g)
	}
	return out
}
