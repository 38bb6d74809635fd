package discovery

import (
	"sort"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// External is a group version served by an extension API server (an APIService with a service)
// and proxied to it: its resources as that server's discovery document lists them, and the
// APIService's priorities, which order the groups and versions as kube-apiserver's aggregator does.
type External struct {
	GroupVersion    schema.GroupVersion
	GroupPriority   int32
	VersionPriority int32
	Resources       []metav1.APIResource
}

// SetExternal replaces the group versions served by extension API servers; the legacy and
// aggregated documents merge them with the local resources.
func (d *Discovery) SetExternal(external []External) {
	d.inputsMu.Lock()
	defer d.inputsMu.Unlock()
	d.external = append([]External(nil), external...)
	d.rebuild()
}

// mergeExternal adds the external group versions to the prepared documents: a version of a group
// served locally joins that group (after its local versions), other groups follow the local ones,
// highest group priority first; within a group, versions go by version priority.
func mergeExternal(docs *documents, groupsList *apidiscoveryv2.APIGroupDiscoveryList, external []External) {
	ext := make([]External, 0, len(external))
	for _, e := range external {
		if e.GroupVersion.Group == "" {
			continue // the core group is never proxied (an APIService "v1." is local)
		}
		ext = append(ext, e)
	}
	sortExternal(ext)
	aggIndex := map[string]int{}
	for i, item := range groupsList.Items {
		aggIndex[item.Name] = i
	}
	for _, e := range ext {
		gv := e.GroupVersion
		docs.resources[gv.String()] = metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: gv.String(),
			APIResources: nonNil(e.Resources),
		}
		entry := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		group, ok := docs.groups[gv.Group]
		if !ok {
			group = metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: gv.Group, PreferredVersion: entry}
			docs.groupList.Groups = append(docs.groupList.Groups, group)
		}
		if containsVersion(group.Versions, gv.Version) {
			continue // served locally: the local version wins in discovery
		}
		group.Versions = append(group.Versions, entry)
		docs.groups[gv.Group] = group
		for i := range docs.groupList.Groups {
			if docs.groupList.Groups[i].Name == gv.Group {
				docs.groupList.Groups[i] = group
			}
		}
		i, ok := aggIndex[gv.Group]
		if !ok {
			groupsList.Items = append(groupsList.Items, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: gv.Group}})
			i = len(groupsList.Items) - 1
			aggIndex[gv.Group] = i
		}
		groupsList.Items[i].Versions = append(groupsList.Items[i].Versions, externalVersion(e))
	}
}

func containsVersion(versions []metav1.GroupVersionForDiscovery, v string) bool {
	for _, have := range versions {
		if have.Version == v {
			return true
		}
	}
	return false
}

func nonNil(in []metav1.APIResource) []metav1.APIResource {
	if in == nil {
		return []metav1.APIResource{}
	}
	return in
}

// sortExternal orders by group priority (highest first), group name, version priority (highest
// first) and then Kubernetes' version order.
func sortExternal(ext []External) {
	sort.SliceStable(ext, func(i, j int) bool {
		a, b := ext[i], ext[j]
		if a.GroupPriority != b.GroupPriority && a.GroupVersion.Group != b.GroupVersion.Group {
			return a.GroupPriority > b.GroupPriority
		}
		if a.GroupVersion.Group != b.GroupVersion.Group {
			return a.GroupVersion.Group < b.GroupVersion.Group
		}
		if a.VersionPriority != b.VersionPriority {
			return a.VersionPriority > b.VersionPriority
		}
		return version.CompareKubeAwareVersionStrings(a.GroupVersion.Version, b.GroupVersion.Version) > 0
	})
}

// externalVersion turns a legacy resource list into the aggregated form: "name/sub" entries
// become subresources of "name".
func externalVersion(e External) apidiscoveryv2.APIVersionDiscovery {
	out := apidiscoveryv2.APIVersionDiscovery{Version: e.GroupVersion.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
	index := map[string]int{}
	kindOf := func(r metav1.APIResource) *metav1.GroupVersionKind {
		gvk := metav1.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
		if gvk.Group == "" && gvk.Version == "" {
			gvk.Group, gvk.Version = e.GroupVersion.Group, e.GroupVersion.Version
		}
		return &gvk
	}
	for _, r := range e.Resources {
		if strings.Contains(r.Name, "/") {
			continue
		}
		scope := apidiscoveryv2.ScopeCluster
		if r.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		index[r.Name] = len(out.Resources)
		out.Resources = append(out.Resources, apidiscoveryv2.APIResourceDiscovery{
			Resource: r.Name, ResponseKind: kindOf(r), Scope: scope, SingularResource: r.SingularName,
			Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories,
		})
	}
	for _, r := range e.Resources {
		parent, sub, ok := strings.Cut(r.Name, "/")
		if !ok {
			continue
		}
		i, ok := index[parent]
		if !ok {
			continue
		}
		out.Resources[i].Subresources = append(out.Resources[i].Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource: sub, ResponseKind: kindOf(r), Verbs: r.Verbs,
		})
	}
	return out
}
