package robustness

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// identityLeaseLabel marks API server identity Leases (upstream's apiserver.kubernetes.io/identity).
const identityLeaseLabel = "apiserver.kubernetes.io/identity"

// versionOf is what the invariants keep of a pod, ReplicaSet or leader-election Lease; false for
// anything else.
func versionOf(obj runtime.Object) (ObjectVersion, bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ObjectVersion{}, false
	}
	v := ObjectVersion{Namespace: m.GetNamespace(), Name: m.GetName(), UID: string(m.GetUID()), RV: parseRV(m.GetResourceVersion())}
	switch o := obj.(type) {
	case *corev1.Pod:
		v.Kind, v.NodeName = KindPod, o.Spec.NodeName
		// Upstream's controller.IsPodActive: neither finished nor terminating.
		v.Active = o.DeletionTimestamp == nil && o.Status.Phase != corev1.PodSucceeded && o.Status.Phase != corev1.PodFailed
		v.Running = o.Status.Phase == corev1.PodRunning
		if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
			v.Owner = string(ref.UID)
		}
	case *appsv1.ReplicaSet:
		v.Kind, v.Generation, v.ObservedGeneration = KindReplicaSet, o.Generation, o.Status.ObservedGeneration
		v.Replicas = 1
		if o.Spec.Replicas != nil {
			v.Replicas = *o.Spec.Replicas
		}
	case *coordinationv1.Lease:
		if _, identity := o.Labels[identityLeaseLabel]; identity {
			// An API server's identity Lease is renewed by whichever process has the identity
			// (a restarted server takes its predecessor's): not a leader election.
			return ObjectVersion{}, false
		}
		v.Kind = KindLease
		if o.Spec.HolderIdentity != nil {
			v.Holder = *o.Spec.HolderIdentity
		}
		if o.Spec.AcquireTime != nil {
			v.AcquireTime = o.Spec.AcquireTime.UnixNano()
		}
		if o.Spec.RenewTime != nil {
			v.RenewTime = o.Spec.RenewTime.UnixNano()
		}
		if o.Spec.LeaseDurationSeconds != nil {
			v.LeaseSeconds = *o.Spec.LeaseDurationSeconds
		}
	default:
		return ObjectVersion{}, false
	}
	return v, true
}

// relisted is what a LIST after a broken record means: its items, and a deletion at the LIST's
// resourceVersion of every object known before that it lacks (deleted while nobody watched).
func relisted(known map[string]ObjectVersion, items []ObjectVersion, kind string, listRV int64) []ObjectVersion {
	present := map[string]bool{}
	out := append([]ObjectVersion(nil), items...)
	for _, it := range items {
		present[it.UID] = true
	}
	for uid, v := range known {
		if !present[uid] {
			out = append(out, ObjectVersion{Kind: kind, Namespace: v.Namespace, Name: v.Name, UID: uid, RV: listRV, Deleted: true, Owner: v.Owner})
		}
	}
	return out
}

// listWatch lists and watches one kind in one namespace.
type listWatch struct {
	kind  string
	list  func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	watch func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

func podsLW(cs kubernetes.Interface, ns string) listWatch {
	return listWatch{kind: KindPod,
		list: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.CoreV1().Pods(ns).List(ctx, o)
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.CoreV1().Pods(ns).Watch(ctx, o)
		}}
}

func replicaSetsLW(cs kubernetes.Interface, ns string) listWatch {
	return listWatch{kind: KindReplicaSet,
		list: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.AppsV1().ReplicaSets(ns).List(ctx, o)
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.AppsV1().ReplicaSets(ns).Watch(ctx, o)
		}}
}

func leasesLW(cs kubernetes.Interface, ns string) listWatch {
	return listWatch{kind: KindLease,
		list: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.CoordinationV1().Leases(ns).List(ctx, o)
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.CoordinationV1().Leases(ns).Watch(ctx, o)
		}}
}

// ObjectRecorder records every version of control-plane objects its watches deliver, for the
// control-plane invariants.
type ObjectRecorder struct {
	mu       sync.Mutex
	versions []ObjectVersion
	gaps     []RecordGap
}

// Record watches lw until ctx ends: a LIST, then watches resumed from the last resourceVersion
// delivered; after a 410 a LIST again, recorded as a gap. retry is the pause after a failure.
func (r *ObjectRecorder) Record(ctx context.Context, lw listWatch, retry time.Duration, clk clock.WithTicker, logger *slog.Logger) {
	known := map[string]ObjectVersion{}
	var rv, delivered int64
	for ctx.Err() == nil {
		var err error
		if rv == 0 {
			rv, err = r.relist(ctx, lw, known, delivered)
		} else {
			rv, err = r.watch(ctx, lw, known, rv)
		}
		if err == nil || ctx.Err() != nil {
			continue
		}
		if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
			delivered, rv = rv, 0
		}
		logger.Debug("object record", "kind", lw.kind, "err", err)
		select {
		case <-ctx.Done():
		case <-clk.After(retry):
		}
	}
}

func (r *ObjectRecorder) relist(ctx context.Context, lw listWatch, known map[string]ObjectVersion, delivered int64) (int64, error) {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	obj, err := lw.list(lctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", lw.kind, err)
	}
	listMeta, err := meta.ListAccessor(obj)
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", lw.kind, err)
	}
	objs, err := meta.ExtractList(obj)
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", lw.kind, err)
	}
	listRV := parseRV(listMeta.GetResourceVersion())
	var items []ObjectVersion
	for _, o := range objs {
		if v, ok := versionOf(o); ok {
			items = append(items, v)
		}
	}
	out := relisted(known, items, lw.kind, listRV)
	clear(known)
	for _, v := range items {
		known[v.UID] = v
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.versions = append(r.versions, out...)
	if delivered > 0 {
		r.gaps = append(r.gaps, RecordGap{Kind: lw.kind, From: delivered, To: listRV})
	}
	return listRV, nil
}

// watch runs one stream from rv and returns the newest resourceVersion it delivered.
func (r *ObjectRecorder) watch(ctx context.Context, lw listWatch, known map[string]ObjectVersion, rv int64) (int64, error) {
	timeout := int64(30)
	w, err := lw.watch(ctx, metav1.ListOptions{ResourceVersion: fmt.Sprint(rv), AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
	if err != nil {
		return rv, fmt.Errorf("watch %s from %d: %w", lw.kind, rv, err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			return rv, fmt.Errorf("watch %s from %d: %w", lw.kind, rv, apierrors.FromObject(ev.Object))
		}
		m, err := meta.Accessor(ev.Object)
		if err != nil {
			return rv, fmt.Errorf("watch %s: unexpected %T", lw.kind, ev.Object)
		}
		rv = max(rv, parseRV(m.GetResourceVersion()))
		v, ok := versionOf(ev.Object)
		if ev.Type == watch.Bookmark || !ok {
			continue
		}
		v.Deleted = ev.Type == watch.Deleted
		if v.Deleted {
			delete(known, v.UID)
		} else {
			known[v.UID] = v
		}
		r.mu.Lock()
		r.versions = append(r.versions, v)
		r.mu.Unlock()
	}
	return rv, nil
}

// Versions is what was recorded so far.
func (r *ObjectRecorder) Versions() ([]ObjectVersion, []RecordGap) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ObjectVersion(nil), r.versions...), append([]RecordGap(nil), r.gaps...)
}

// failover is a RoundTripper that sends each request to one of the cluster's API servers and
// moves to the next after a transport error or a 5xx: the workload driver, the simulated nodes
// and the object recorder must outlive the loss of any one node, as a client behind a load
// balancer would.
type failover struct {
	next  http.RoundTripper
	hosts []string
	mu    sync.Mutex
	cur   int
}

func (f *failover) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	i := f.cur
	f.mu.Unlock()
	req = req.Clone(req.Context())
	req.URL.Host, req.Host = f.hosts[i], ""
	resp, err := f.next.RoundTrip(req)
	if err != nil || resp.StatusCode >= http.StatusInternalServerError {
		f.mu.Lock()
		if f.cur == i {
			f.cur = (i + 1) % len(f.hosts)
		}
		f.mu.Unlock()
	}
	return resp, err
}

// failoverConfig is the admin's config spread over every node's API server.
func failoverConfig(nodes []*Node) (*rest.Config, error) {
	var hosts []string
	var cfg *rest.Config
	for _, n := range nodes {
		c, err := n.RESTConfig(false)
		if err != nil {
			return nil, err
		}
		if cfg == nil {
			cfg = c
		}
		hosts = append(hosts, c.Host[len("https://"):])
	}
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &failover{next: rt, hosts: hosts} }
	return cfg, nil
}
