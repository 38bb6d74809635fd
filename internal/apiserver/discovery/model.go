package discovery

import (
	"sort"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"github.com/skiff-sh/skiff/internal/registry"
)

// Subresource is a subresource served beyond the /status and /scale that registry.Resource
// declares: pods/binding, pods/log, pods/exec, namespaces/finalize, nodes/proxy and the like.
type Subresource struct {
	Name  string   // "log"
	Verbs []string // "get", "create", ...
	// Kind is the kind the subresource accepts or returns. An empty Group and Version mean the
	// parent resource's group-version; an empty Kind means the parent's kind.
	Kind schema.GroupVersionKind
}

// defaultVerbs are served when a Resource leaves Verbs nil.
var defaultVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// subresourceVerbs are the verbs of /status and /scale.
var subresourceVerbs = []string{"get", "patch", "update"}

var scaleKind = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}

// servedSubresource is one subresource with its kind resolved.
type servedSubresource struct {
	name  string
	kind  schema.GroupVersionKind
	verbs []string
}

// servedResource is one resource of one group-version as discovery shows it.
type servedResource struct {
	resource     *registry.Resource
	verbs        []string
	subresources []servedSubresource
}

// groupModel is one API group: its versions, most preferred first.
type groupModel struct {
	name     string
	versions []string
	byVer    map[string][]servedResource
}

// model is the discovery view of a set of resources: groups in order of first appearance (core
// first when present), versions by Kubernetes version priority, resources by name.
type model struct {
	core   *groupModel // nil when nothing is served in the core group
	groups []*groupModel
}

func buildModel(resources []*registry.Resource, extra map[schema.GroupResource][]Subresource) *model {
	byName := map[string]*groupModel{}
	var order []string
	for _, r := range resources {
		if r == nil {
			continue
		}
		group, ok := byName[r.GroupVersion.Group]
		if !ok {
			group = &groupModel{name: r.GroupVersion.Group, byVer: map[string][]servedResource{}}
			byName[r.GroupVersion.Group] = group
			order = append(order, r.GroupVersion.Group)
		}
		if _, ok := group.byVer[r.GroupVersion.Version]; !ok {
			group.versions = append(group.versions, r.GroupVersion.Version)
		}
		group.byVer[r.GroupVersion.Version] = append(group.byVer[r.GroupVersion.Version], serve(r, extra[r.GroupResource()]))
	}
	m := &model{}
	for _, name := range order {
		group := byName[name]
		sort.Slice(group.versions, func(i, j int) bool {
			return version.CompareKubeAwareVersionStrings(group.versions[i], group.versions[j]) > 0
		})
		for _, list := range group.byVer {
			sort.Slice(list, func(i, j int) bool { return list[i].resource.Plural < list[j].resource.Plural })
		}
		if name == "" {
			m.core = group
			continue
		}
		m.groups = append(m.groups, group)
	}
	return m
}

func serve(r *registry.Resource, extra []Subresource) servedResource {
	verbs := defaultVerbs
	if r.Verbs != nil {
		verbs = sortedCopy(r.Verbs)
	}
	out := servedResource{resource: r, verbs: verbs}
	if r.Status != nil {
		out.subresources = append(out.subresources, servedSubresource{name: "status", kind: r.GroupVersionKind(), verbs: subresourceVerbs})
	}
	if r.Scale != nil {
		out.subresources = append(out.subresources, servedSubresource{name: "scale", kind: scaleKind, verbs: subresourceVerbs})
	}
	declared := map[string]bool{"status": r.Status != nil, "scale": r.Scale != nil}
	for name, sub := range r.Subresources {
		if declared[name] || sub == nil || sub.Strategy == nil {
			continue
		}
		declared[name] = true
		verbs := subresourceVerbs
		if sub.Verbs != nil {
			verbs = sortedCopy(sub.Verbs)
		}
		out.subresources = append(out.subresources, servedSubresource{name: name, kind: r.GroupVersionKind(), verbs: verbs})
	}
	for _, sub := range extra {
		if declared[sub.Name] {
			// The Resource declares it already (an extra list written before it did).
			continue
		}
		kind := sub.Kind
		if kind.Group == "" && kind.Version == "" {
			kind.Group, kind.Version = r.GroupVersion.Group, r.GroupVersion.Version
		}
		if kind.Kind == "" {
			kind.Kind = r.Kind
		}
		out.subresources = append(out.subresources, servedSubresource{name: sub.Name, kind: kind, verbs: sortedCopy(sub.Verbs)})
	}
	sort.SliceStable(out.subresources, func(i, j int) bool { return out.subresources[i].name < out.subresources[j].name })
	return out
}

func sortedCopy(in []string) []string {
	out := append([]string{}, in...)
	sort.Strings(out)
	return out
}

// apiResources is the legacy APIResourceList content of one group-version: each resource, then
// each of its subresources as "<resource>/<subresource>".
func apiResources(gv schema.GroupVersion, served []servedResource) []metav1.APIResource {
	out := make([]metav1.APIResource, 0, len(served))
	for _, s := range served {
		r := s.resource
		out = append(out, metav1.APIResource{
			Name:         r.Plural,
			SingularName: r.Singular,
			Namespaced:   r.Namespaced,
			Kind:         r.Kind,
			Verbs:        metav1.Verbs(s.verbs),
			ShortNames:   r.ShortNames,
			Categories:   r.Categories,
			// Only the resource carries it, as kube-apiserver's lists: subresources are not stored.
			StorageVersionHash: r.StorageVersionHash,
		})
		for _, sub := range s.subresources {
			entry := metav1.APIResource{
				Name:       r.Plural + "/" + sub.name,
				Namespaced: r.Namespaced,
				Kind:       sub.kind.Kind,
				Verbs:      metav1.Verbs(sub.verbs),
			}
			// Group and version are only spelled out when they differ from the list's.
			if sub.kind.GroupVersion() != gv {
				entry.Group, entry.Version = sub.kind.Group, sub.kind.Version
			}
			out = append(out, entry)
		}
	}
	return out
}

// aggregatedGroup is one group of the aggregated document, versions most preferred first.
func aggregatedGroup(group *groupModel) apidiscoveryv2.APIGroupDiscovery {
	out := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: group.name}}
	for _, v := range group.versions {
		version := apidiscoveryv2.APIVersionDiscovery{Version: v, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
		for _, s := range group.byVer[v] {
			r := s.resource
			scope := apidiscoveryv2.ScopeCluster
			if r.Namespaced {
				scope = apidiscoveryv2.ScopeNamespace
			}
			kind := r.GroupVersionKind()
			resource := apidiscoveryv2.APIResourceDiscovery{
				Resource:         r.Plural,
				ResponseKind:     &metav1.GroupVersionKind{Group: kind.Group, Version: kind.Version, Kind: kind.Kind},
				Scope:            scope,
				SingularResource: r.Singular,
				Verbs:            s.verbs,
				ShortNames:       r.ShortNames,
				Categories:       r.Categories,
			}
			for _, sub := range s.subresources {
				resource.Subresources = append(resource.Subresources, apidiscoveryv2.APISubresourceDiscovery{
					Subresource:  sub.name,
					ResponseKind: &metav1.GroupVersionKind{Group: sub.kind.Group, Version: sub.kind.Version, Kind: sub.kind.Kind},
					Verbs:        sub.verbs,
				})
			}
			version.Resources = append(version.Resources, resource)
		}
		out.Versions = append(out.Versions, version)
	}
	return out
}

// legacyGroup is the APIGroup of the legacy /apis and /apis/<group> documents.
func legacyGroup(group *groupModel) metav1.APIGroup {
	out := metav1.APIGroup{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
		Name:     group.name,
	}
	for _, v := range group.versions {
		out.Versions = append(out.Versions, metav1.GroupVersionForDiscovery{
			GroupVersion: schema.GroupVersion{Group: group.name, Version: v}.String(),
			Version:      v,
		})
	}
	out.PreferredVersion = out.Versions[0]
	return out
}
