package manifests

import (
	"cmp"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Deployed is an object in the cluster carrying FileLabel.
type Deployed struct {
	Key Key
	// GVK is the kind as listed (its version is the one to delete it through).
	GVK schema.GroupVersionKind
	// FileLabel is the FileLabel value; File the FileAnnotation; Hash the HashAnnotation.
	FileLabel, File, Hash string
}

// Plan is what one pass does: apply Apply in order, then delete Prune in order. Refused are the
// files nothing is done with this pass, with why.
type Plan struct {
	Apply   []Object
	Prune   []Deployed
	Refused map[string]error
}

// Decide plans a pass from the directory's files and the labelled objects in the cluster.
//
//   - An object of a good file is applied when the cluster has no such object, or one that another
//     file's label names, or one whose HashAnnotation differs: an unchanged file costs no request,
//     and an object someone deleted comes back.
//   - A labelled object is pruned when its file is gone, or parses and no longer holds it, and no
//     other file holds it (an object moved between files is relabelled by the apply, not deleted).
//     A refused file's objects are left as they are.
//   - Two files holding one object would take it from each other on every pass: the later file
//     (by name) is refused.
//
// Apply is ordered by kind (CustomResourceDefinitions and Namespaces first, webhook configurations
// last, see kindRank), then by file and position; Prune in the reverse kind order. A custom
// resource whose definition is applied in the same pass may fail until the definition is served;
// it is not up to date afterwards, so the next pass applies it again.
func Decide(files []File, deployed []Deployed) Plan {
	p := Plan{Refused: map[string]error{}}
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b File) int { return cmp.Compare(a.Name, b.Name) })
	owner := map[Key]string{}   // each object's file, first by name
	held := map[Key]bool{}      // every object of any parsed file, kept from pruning
	byLabel := map[string]int{} // FileLabel value -> index in files
	for i, f := range files {
		byLabel[LabelValue(f.Name)] = i
		if f.Err != nil {
			p.Refused[f.Name] = f.Err
			continue
		}
		for _, o := range f.Objects {
			k := o.Key()
			held[k] = true
			if other, dup := owner[k]; dup && other != f.Name {
				p.Refused[f.Name] = fmt.Errorf("%s is also in %s", k, other)
				continue
			}
			owner[k] = f.Name
		}
	}
	current := make(map[Key]Deployed, len(deployed))
	for _, d := range deployed {
		current[d.Key] = d
	}
	for _, f := range files {
		if p.Refused[f.Name] != nil {
			continue
		}
		label := LabelValue(f.Name)
		for _, o := range f.Objects {
			d, ok := current[o.Key()]
			if ok && d.FileLabel == label && d.Hash == o.Hash {
				continue
			}
			p.Apply = append(p.Apply, o)
		}
	}
	for _, d := range deployed {
		if held[d.Key] {
			continue
		}
		if i, ok := byLabel[d.FileLabel]; ok && files[i].Err != nil {
			continue
		}
		p.Prune = append(p.Prune, d)
	}
	slices.SortStableFunc(p.Apply, func(a, b Object) int {
		return cmp.Or(cmp.Compare(kindRank(a.Obj.GroupVersionKind().GroupKind()), kindRank(b.Obj.GroupVersionKind().GroupKind())),
			cmp.Compare(a.File, b.File), cmp.Compare(a.Index, b.Index))
	})
	slices.SortStableFunc(p.Prune, func(a, b Deployed) int {
		return cmp.Or(cmp.Compare(kindRank(b.GVK.GroupKind()), kindRank(a.GVK.GroupKind())),
			cmp.Compare(a.Key.String(), b.Key.String()))
	})
	return p
}

// installOrder ranks the kinds other objects depend on, after Helm's install order: definitions
// and namespaces before what lives in them, identities and policy before the workloads that use
// them, and admission webhooks last, so that a webhook whose service is not up yet cannot refuse
// the objects that start it.
var installOrder = []schema.GroupKind{
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"},
	{Kind: "Namespace"},
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"},
	{Kind: "ResourceQuota"},
	{Kind: "LimitRange"},
	{Kind: "ServiceAccount"},
	{Kind: "Secret"},
	{Kind: "ConfigMap"},
	{Group: "storage.k8s.io", Kind: "StorageClass"},
	{Kind: "PersistentVolume"},
	{Kind: "PersistentVolumeClaim"},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"},
	{Group: "rbac.authorization.k8s.io", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"},
	{Kind: "Service"},
}

// lateKinds go after every other kind.
var lateKinds = []schema.GroupKind{
	{Group: "apiregistration.k8s.io", Kind: "APIService"},
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"},
}

// kindRank orders kinds for apply: installOrder, then any other kind, then lateKinds.
func kindRank(gk schema.GroupKind) int {
	if i := slices.Index(installOrder, gk); i >= 0 {
		return i
	}
	if i := slices.Index(lateKinds, gk); i >= 0 {
		return len(installOrder) + 1 + i
	}
	return len(installOrder)
}
