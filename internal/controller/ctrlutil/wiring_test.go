package ctrlutil

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func newTestLoop(t *testing.T) *Loop {
	t.Helper()
	l := NewLoop("test", Deps{Clock: clocktesting.NewFakeClock(metav1.Now().Time)}, func(context.Context, string) error { return nil })
	t.Cleanup(l.Queue.ShutDown)
	return l
}

// drain returns the keys queued on l, sorted.
func drain(l *Loop) []string {
	var keys []string
	for l.Queue.Len() > 0 {
		k, _ := l.Queue.Get()
		keys = append(keys, k)
		l.Queue.Done(k)
	}
	slices.Sort(keys)
	return keys
}

func ownedPod(name, kind, owner string) *corev1.Pod {
	p := pod(name)
	p.Namespace = "ns"
	if kind != "" {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: owner, Controller: ptr.To(true)}}
	}
	return p
}

func TestOwnerKey(t *testing.T) {
	notController := ownedPod("p", "DaemonSet", "ds")
	notController.OwnerReferences[0].Controller = nil
	for _, tc := range []struct {
		name    string
		obj     any
		kind    string
		wantKey string
	}{
		{name: "pod of the kind", obj: ownedPod("p", "DaemonSet", "ds"), kind: "DaemonSet", wantKey: "ns/ds"},
		{name: "tombstone of a pod of the kind", obj: cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: ownedPod("p", "DaemonSet", "ds")}, kind: "DaemonSet", wantKey: "ns/ds"},
		{name: "pod of another kind", obj: ownedPod("p", "ReplicaSet", "rs"), kind: "DaemonSet"},
		{name: "owner that is not the controller", obj: notController, kind: "DaemonSet"},
		{name: "orphan", obj: ownedPod("p", "", ""), kind: "StatefulSet"},
		{name: "tombstone of something that is no object", obj: cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: "junk"}, kind: "DaemonSet"},
		{name: "a Job of a CronJob", obj: &metav1.ObjectMeta{Namespace: "ns", Name: "j",
			OwnerReferences: []metav1.OwnerReference{{Kind: "CronJob", Name: "cj", Controller: ptr.To(true)}}}, kind: "CronJob", wantKey: "ns/cj"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, obj, ok := OwnerKey(tc.obj, tc.kind)
			if key != tc.wantKey || ok != (tc.wantKey != "") {
				t.Fatalf("OwnerKey = %q, %v; want %q", key, ok, tc.wantKey)
			}
			if ok && obj == nil {
				t.Fatal("OwnerKey found the owner but returned no object")
			}
			l := newTestLoop(t)
			On(OnAll, l.EnqueueOwner(tc.kind)).OnDelete(tc.obj)
			var want []string
			if tc.wantKey != "" {
				want = []string{tc.wantKey}
			}
			if got := drain(l); !slices.Equal(got, want) {
				t.Errorf("EnqueueOwner queued %v, want %v", got, want)
			}
		})
	}
}

func TestOn(t *testing.T) {
	obj := ownedPod("p", "", "")
	for _, tc := range []struct {
		events                  Events
		wantAdd, wantUp, wantDe bool
	}{
		{events: OnAll, wantAdd: true, wantUp: true, wantDe: true},
		{events: OnAdd | OnUpdate, wantAdd: true, wantUp: true},
		{events: OnUpdate | OnDelete, wantUp: true, wantDe: true},
		{events: OnDelete, wantDe: true},
	} {
		var seen []any
		h := On(tc.events, func(o any) { seen = append(seen, o) })
		if (h.AddFunc != nil) != tc.wantAdd || (h.UpdateFunc != nil) != tc.wantUp || (h.DeleteFunc != nil) != tc.wantDe {
			t.Errorf("On(%b): add %v update %v delete %v", tc.events, h.AddFunc != nil, h.UpdateFunc != nil, h.DeleteFunc != nil)
			continue
		}
		// Every notification goes through the handler, which ignores the ones not asked for.
		h.OnAdd(obj, false)
		h.OnUpdate(ownedPod("old", "", ""), obj)
		h.OnDelete(obj)
		calls := 0
		for _, b := range []bool{tc.wantAdd, tc.wantUp, tc.wantDe} {
			if b {
				calls++
			}
		}
		if len(seen) != calls {
			t.Fatalf("On(%b) called fn %d times, want %d", tc.events, len(seen), calls)
		}
		for _, o := range seen {
			if o != obj {
				t.Errorf("On(%b) passed %v, want the new object", tc.events, o)
			}
		}
	}
}

func TestPodServiceHandlers(t *testing.T) {
	svc := func(name string, selector map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.ServiceSpec{Selector: selector}}
	}
	labelled := func(l map[string]string) *corev1.Pod {
		p := ownedPod("p", "", "")
		p.Labels = l
		return p
	}
	services := []runtime.Object{
		svc("web", map[string]string{"app": "web"}),
		svc("api", map[string]string{"app": "api"}),
		svc("all-web", map[string]string{"tier": "front"}),
		svc("no-selector", nil),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "web"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}},
	}
	web, api := labelled(map[string]string{"app": "web", "tier": "front"}), labelled(map[string]string{"app": "api"})
	for _, tc := range []struct {
		name string
		fire func(h cache.ResourceEventHandlerFuncs)
		want []string
	}{
		{name: "add queues the services selecting the pod", fire: func(h cache.ResourceEventHandlerFuncs) { h.OnAdd(web, false) },
			want: []string{"ns/all-web", "ns/web"}},
		{name: "update queues the services of the old labels and of the new", fire: func(h cache.ResourceEventHandlerFuncs) { h.OnUpdate(web, api) },
			want: []string{"ns/all-web", "ns/api", "ns/web"}},
		{name: "delete of a tombstone queues the pod's services", fire: func(h cache.ResourceEventHandlerFuncs) {
			h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: api})
		}, want: []string{"ns/api"}},
		{name: "a pod no service selects queues nothing", fire: func(h cache.ResourceEventHandlerFuncs) {
			h.OnAdd(labelled(map[string]string{"app": "db"}), false)
		}},
		{name: "something that is no pod queues nothing", fire: func(h cache.ResourceEventHandlerFuncs) { h.OnDelete("junk") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			factory := informers.NewSharedInformerFactory(fake.NewClientset(services...), 0)
			lister := factory.Core().V1().Services().Lister()
			for _, s := range services {
				if err := factory.Core().V1().Services().Informer().GetIndexer().Add(s); err != nil {
					t.Fatal(err)
				}
			}
			l := newTestLoop(t)
			tc.fire(l.PodServiceHandlers(lister))
			if got := drain(l); !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSliceServiceKey(t *testing.T) {
	slice := func(labels map[string]string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s-1", Labels: labels}}
	}
	const ours = "endpointslice-controller.k8s.io"
	for _, tc := range []struct {
		name string
		obj  any
		want string
	}{
		{name: "our slice", obj: slice(map[string]string{discoveryv1.LabelManagedBy: ours, discoveryv1.LabelServiceName: "web"}), want: "ns/web"},
		{name: "tombstone of our slice", obj: cache.DeletedFinalStateUnknown{Obj: slice(map[string]string{
			discoveryv1.LabelManagedBy: ours, discoveryv1.LabelServiceName: "web"})}, want: "ns/web"},
		{name: "another manager's slice", obj: slice(map[string]string{discoveryv1.LabelManagedBy: "someone", discoveryv1.LabelServiceName: "web"})},
		{name: "our slice without a service name", obj: slice(map[string]string{discoveryv1.LabelManagedBy: ours})},
		{name: "not a slice", obj: &appsv1.ReplicaSet{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, ok := SliceServiceKey(tc.obj, ours)
			if key != tc.want || ok != (tc.want != "") {
				t.Errorf("SliceServiceKey = %q, %v; want %q", key, ok, tc.want)
			}
		})
	}
}

func TestWiringCollectsEveryWatchedCache(t *testing.T) {
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	synced, err := NewWiring("test").
		Watch(factory.Core().V1().Pods().Informer(), On(OnAdd, func(any) {})).
		Watch(factory.Core().V1().Services().Informer(), nil).
		Done()
	if err != nil {
		t.Fatal(err)
	}
	if len(synced) != 2 {
		t.Fatalf("Done returned %d caches to wait for, want both watched informers'", len(synced))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		t.Fatal("caches did not sync")
	}
	// A handler put on an informer that has stopped is refused; Done reports it with the controller's name.
	cancel()
	factory.Shutdown()
	if _, err := NewWiring("late").Watch(factory.Core().V1().Pods().Informer(), On(OnAdd, func(any) {})).Done(); err == nil {
		t.Error("Done after a refused registration returned no error")
	}
}
