package quota

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/quota"
)

// refusal is a decision's reason to refuse the write, sent as a 403.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

// Write is the write Check judges: an object of Resource (through Subresource, "" or "resize"
// for a pod's in-place resize), and on update the stored object it replaces (Old, else nil).
type Write struct {
	Resource    schema.GroupResource
	Subresource string
	Object, Old runtime.Object
}

// setsResources reports whether the write states a pod's requests and limits: its create, or its
// resize. Upstream judges the quota's constraints on those only (its pod evaluator handles other
// pod updates only when their Terminating scope changes, and they cannot change resources).
func (w Write) setsResources() bool {
	return w.Old == nil || w.Subresource == "resize"
}

// Check decides a write against the namespace's quotas: it returns copies of the quotas whose
// status.used the write raises, with the new usage, or a refusal. It is upstream's check: a quota
// that covers the object but has no recorded usage yet refuses ("status unknown"), a pod without
// the requests or limits a quota limits refuses ("failed quota"), and usage beyond status.hard
// refuses ("exceeded quota"). An update is charged what it adds to the stored object's usage
// (nothing for what it lowers), where the quota covered the stored object too; a pod's resize is
// such an update (quota.PodRequests counts a resize in flight at the larger of before and after).
func Check(quotas []corev1.ResourceQuota, w Write) ([]corev1.ResourceQuota, error) {
	gr, obj := w.Resource, w.Object
	usage := quota.Usage(gr, obj)
	var increase corev1.ResourceList
	if w.Old != nil {
		increase = corev1.ResourceList{}
		prev := quota.Usage(gr, w.Old)
		for name, q := range usage {
			if p, ok := prev[name]; ok {
				q = q.DeepCopy()
				q.Sub(p)
				if q.Sign() < 0 {
					q = resource.Quantity{}
				}
			}
			increase[name] = q
		}
	}
	sort.Slice(quotas, func(i, j int) bool { return quotas[i].Name < quotas[j].Name })
	var charged []corev1.ResourceQuota
	for i := range quotas {
		q := &quotas[i]
		if !quota.Matches(q, gr, obj) {
			continue
		}
		var covered []corev1.ResourceName
		for name := range q.Status.Hard {
			if quota.Covers(q, gr, name) {
				covered = append(covered, name)
			}
		}
		if len(covered) == 0 {
			continue
		}
		if pod, ok := obj.(*corev1.Pod); ok && w.setsResources() {
			hard := corev1.ResourceList{}
			for _, n := range covered {
				hard[n] = q.Status.Hard[n]
			}
			if err := quota.Constraints(hard, pod); err != nil {
				return nil, &refusal{fmt.Sprintf("failed quota: %s: %v", q.Name, err)}
			}
		}
		if q.Status.Used == nil {
			return nil, &refusal{fmt.Sprintf("status unknown for quota: %s, resources: %s", q.Name, quota.Names(covered))}
		}
		// A name the controller recorded no usage for is one it cannot count (a count/<resource>
		// of a kind it does not watch): it is not enforced, rather than refusing such objects for
		// ever as upstream's "status unknown" would.
		tracked := covered[:0]
		for _, n := range covered {
			if _, ok := q.Status.Used[n]; ok {
				tracked = append(tracked, n)
			}
		}
		covered = tracked
		charge := usage
		if w.Old != nil && quota.Matches(q, gr, w.Old) {
			charge = increase
		}
		requested, used, hard := corev1.ResourceList{}, corev1.ResourceList{}, corev1.ResourceList{}
		next := q.Status.Used.DeepCopy()
		for _, n := range covered {
			r, ok := charge[n]
			if !ok || r.IsZero() {
				continue
			}
			sum := q.Status.Used[n].DeepCopy()
			sum.Add(r)
			next[n] = sum
			if sum.Cmp(q.Status.Hard[n]) > 0 {
				requested[n], used[n], hard[n] = r, q.Status.Used[n], q.Status.Hard[n]
			}
		}
		if len(requested) > 0 {
			return nil, &refusal{fmt.Sprintf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
				q.Name, quota.PrettyPrint(requested), quota.PrettyPrint(used), quota.PrettyPrint(hard))}
		}
		if !equalLists(next, q.Status.Used) {
			c := q.DeepCopy()
			c.Status.Used = next
			charged = append(charged, *c)
		}
	}
	return charged, nil
}

func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

// Store is what the plugin needs of the API server beyond Lookup: a list that is not stale and a
// compare-and-swap write of a quota's status (the object's resourceVersion is the precondition).
type Store interface {
	ListFresh(ctx context.Context, group, resource, namespace string) (runtime.Object, error)
	UpdateStatus(ctx context.Context, group, resource string, obj runtime.Object) (runtime.Object, error)
}

// attempts bounds how often a write is re-checked against quotas another write changed meanwhile.
const attempts = 5

// lockStripes is how many locks the namespaces share (by hash) to charge one at a time.
const lockStripes = 64

// Plugin is the ResourceQuota admission plugin. Charges to one namespace's quotas are made one at
// a time on this server (as upstream's evaluator queues them per namespace), so its own writes do
// not conflict with each other; the compare-and-swap covers other API servers and the controller.
type Plugin struct {
	log   *slog.Logger
	locks [lockStripes]sync.Mutex
}

var _ admission.Plugin = &Plugin{}

// New builds the plugin.
func New(log *slog.Logger) *Plugin {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Plugin{log: log}
}

// Name is Kubernetes' plugin name.
func (*Plugin) Name() string { return "ResourceQuota" }

// Admit does nothing: quota is charged once the object is final, in Validate.
func (*Plugin) Admit(context.Context, *admission.Attributes, admission.Lookup) error {
	return nil
}

// handles reports whether the write is charged: creates and updates of namespaced objects, and
// of their subresources only a pod's resize (as upstream's pod evaluator; a status write changes
// no usage the plugin charges).
func handles(a *admission.Attributes) bool {
	if (a.Verb != "create" && a.Verb != "update") || a.Namespace == "" || !a.Resource.Namespaced {
		return false
	}
	switch a.Subresource {
	case "":
		return true
	case "resize":
		return a.Verb == "update" && a.Resource.GroupResource() == schema.GroupResource{Resource: "pods"}
	}
	return false
}

// Validate charges a create or update of a namespaced object to the quotas covering it before it
// is stored: each quota's status is written with a compare-and-swap on its resourceVersion, and a
// conflict (another write charged it first, here or on another API server) re-reads and re-checks
// the quotas not yet charged. Dry runs are checked but charge nothing.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) error {
	if !handles(a) {
		return nil
	}
	gr := a.Resource.GroupResource()
	store, canWrite := lookup.(Store)
	h := fnv.New32a()
	_, _ = h.Write([]byte(a.Namespace))
	lock, locked := &p.locks[h.Sum32()%lockStripes], false
	defer func() {
		if locked {
			lock.Unlock()
		}
	}()
	charged := map[string]bool{}
	for attempt := 0; attempt < attempts; attempt++ {
		var list runtime.Object
		var err error
		if attempt == 0 || !canWrite {
			list, err = lookup.List(ctx, "", "resourcequotas", a.Namespace)
		} else {
			list, err = store.ListFresh(ctx, "", "resourcequotas", a.Namespace)
		}
		if apierrors.IsNotFound(err) {
			return nil // quotas are not served
		}
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("list resource quotas in %s: %w", a.Namespace, err))
		}
		rql, ok := list.(*corev1.ResourceQuotaList)
		if !ok || len(rql.Items) == 0 {
			return nil
		}
		var pending []corev1.ResourceQuota
		for _, q := range rql.Items {
			if !charged[q.Name] {
				pending = append(pending, q)
			}
		}
		updates, err := Check(pending, Write{Resource: gr, Subresource: a.Subresource, Object: a.Object, Old: a.OldObject})
		var r *refusal
		if errors.As(err, &r) {
			return apierrors.NewForbidden(gr, a.Name, r)
		}
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		if a.DryRun || len(updates) == 0 {
			return nil
		}
		if !locked {
			// Writes that charge nothing (no quota covers them) never wait; those that do are
			// read and checked again under the namespace's lock.
			lock.Lock()
			locked = true
			attempt--
			continue
		}
		if !canWrite {
			return apierrors.NewInternalError(fmt.Errorf("resource quota admission cannot write quota status"))
		}
		conflict := false
		for i := range updates {
			_, err := store.UpdateStatus(ctx, "", "resourcequotas", &updates[i])
			switch {
			case err == nil:
				charged[updates[i].Name] = true
			case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
				conflict = true
			default:
				return apierrors.NewInternalError(fmt.Errorf("charge resource quota %s/%s: %w", a.Namespace, updates[i].Name, err))
			}
		}
		if !conflict {
			return nil
		}
		p.log.Debug("resource quota changed meanwhile; checking again", "namespace", a.Namespace, "name", a.Name, "attempt", attempt+1)
	}
	return apierrors.NewForbidden(gr, a.Name, fmt.Errorf("unable to charge quota: too many concurrent changes to the quotas of namespace %s", a.Namespace))
}
