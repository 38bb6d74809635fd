package etcd3_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/storage"
)

// TestGuaranteedUpdateFromCachedCopy: a cached copy saves the read when it is current, and when it
// is behind the update still lands on the stored object; verdicts drawn from a cached copy are
// confirmed on the stored one before they are returned, and the shared copy is never modified.
func TestGuaranteedUpdateFromCachedCopy(t *testing.T) {
	s := newPodStore(t, env.client(t), storage.EncodingProtobuf)
	ctx := ctxFor(t)
	var _ storage.CachedUpdater = s

	// counted wraps an update function with a call counter and a record of what it saw.
	type seen struct {
		calls int
		nodes []string
		notes []string
	}
	counted := func(rec *seen, fn func(*corev1.Pod) error) storage.UpdateFunc {
		return func(cur runtime.Object) (runtime.Object, error) {
			pod := cur.(*corev1.Pod)
			rec.calls++
			rec.nodes = append(rec.nodes, pod.Spec.NodeName)
			rec.notes = append(rec.notes, pod.Annotations["copy"])
			return pod, fn(pod)
		}
	}
	label := func(pod *corev1.Pod) error {
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels["touched"] = "yes"
		return nil
	}
	setup := func(t *testing.T) (key string, stale, current *corev1.Pod) {
		key = prefixFor(t) + "default/web"
		stale = mustCreate(t, s, key, makePod("web").obj())
		current = &corev1.Pod{}
		if err := s.GuaranteedUpdate(ctx, key, current, false, nil, setNode("a")); err != nil {
			t.Fatal(err)
		}
		return key, stale, current
	}

	t.Run("a current copy is used as it is", func(t *testing.T) {
		key, _, current := setup(t)
		// Only the copy carries the annotation, so an update that saw it did not read etcd.
		cached := current.DeepCopy()
		cached.Annotations = map[string]string{"copy": "cache"}
		before := cached.DeepCopy()
		rec := &seen{}
		out := &corev1.Pod{}
		if err := s.GuaranteedUpdateFrom(ctx, key, out, false, nil, counted(rec, label), cached); err != nil {
			t.Fatal(err)
		}
		if rec.calls != 1 || rec.notes[0] != "cache" {
			t.Fatalf("tryUpdate ran %d times and saw %q, want once on the cached copy", rec.calls, rec.notes)
		}
		if out.Labels["touched"] != "yes" || rvOf(t, out) <= rvOf(t, current) {
			t.Fatalf("update result %+v", out.ObjectMeta)
		}
		if !apiequality.Semantic.DeepEqual(before, cached) {
			t.Fatal("the shared cached copy was modified")
		}
	})

	t.Run("a copy that is behind costs a retry, not the newer write", func(t *testing.T) {
		key, stale, _ := setup(t)
		rec := &seen{}
		out := &corev1.Pod{}
		if err := s.GuaranteedUpdateFrom(ctx, key, out, false, nil, counted(rec, label), stale); err != nil {
			t.Fatal(err)
		}
		if rec.calls != 2 || rec.nodes[0] != "" || rec.nodes[1] != "a" {
			t.Fatalf("tryUpdate saw nodes %q, want the stale copy then the stored pod", rec.nodes)
		}
		if out.Spec.NodeName != "a" || out.Labels["touched"] != "yes" {
			t.Fatalf("result lost a write: node %q labels %v", out.Spec.NodeName, out.Labels)
		}
	})

	t.Run("a precondition the copy fails is checked on the stored object", func(t *testing.T) {
		key, stale, current := setup(t)
		out := &corev1.Pod{}
		pre := &storage.Preconditions{ResourceVersion: ptr(current.ResourceVersion)}
		if err := s.GuaranteedUpdateFrom(ctx, key, out, false, pre, counted(&seen{}, label), stale); err != nil {
			t.Fatalf("update with the stored resourceVersion as precondition: %v", err)
		}
		pre = &storage.Preconditions{ResourceVersion: ptr(stale.ResourceVersion)}
		if err := s.GuaranteedUpdateFrom(ctx, key, &corev1.Pod{}, false, pre, counted(&seen{}, label), stale); !storage.IsConflict(err) {
			t.Fatalf("a precondition the stored object fails = %v, want Conflict", err)
		}
	})

	t.Run("an error from the copy is confirmed on the stored object", func(t *testing.T) {
		key, stale, _ := setup(t)
		needsNode := func(pod *corev1.Pod) error {
			if pod.Spec.NodeName == "" {
				return errors.New("not bound")
			}
			return label(pod)
		}
		rec := &seen{}
		out := &corev1.Pod{}
		if err := s.GuaranteedUpdateFrom(ctx, key, out, false, nil, counted(rec, needsNode), stale); err != nil {
			t.Fatalf("the stored pod is bound, yet: %v", err)
		}
		if rec.calls != 2 || out.Labels["touched"] != "yes" {
			t.Fatalf("tryUpdate ran %d times, result labels %v", rec.calls, out.Labels)
		}
		refuse := errors.New("refused")
		err := s.GuaranteedUpdateFrom(ctx, key, &corev1.Pod{}, false, nil, counted(&seen{}, func(*corev1.Pod) error { return refuse }), stale)
		if !errors.Is(err, refuse) {
			t.Fatalf("an error on the stored object too = %v, want it returned", err)
		}
	})

	t.Run("nothing to change on a stale copy is confirmed on the stored object", func(t *testing.T) {
		key, stale, current := setup(t)
		rec := &seen{}
		out := &corev1.Pod{}
		// The stale copy has no node: setting "" changes nothing there, but the stored pod has "a".
		if err := s.GuaranteedUpdateFrom(ctx, key, out, false, nil, counted(rec, func(p *corev1.Pod) error { p.Spec.NodeName = ""; return nil }), stale); err != nil {
			t.Fatal(err)
		}
		if rec.calls != 2 || out.Spec.NodeName != "" || rvOf(t, out) <= rvOf(t, current) {
			t.Fatalf("calls %d, result node %q rv %s: the stored pod was not updated", rec.calls, out.Spec.NodeName, out.ResourceVersion)
		}
		// Nothing to change on the current copy: no write, the stored revision comes back.
		again := &corev1.Pod{}
		if err := s.GuaranteedUpdateFrom(ctx, key, again, false, nil, counted(&seen{}, func(*corev1.Pod) error { return nil }), out); err != nil {
			t.Fatal(err)
		}
		if again.ResourceVersion != out.ResourceVersion {
			t.Fatalf("a no-op update wrote: %s -> %s", out.ResourceVersion, again.ResourceVersion)
		}
	})

	t.Run("no result wanted", func(t *testing.T) {
		key, stale, current := setup(t)
		for _, cached := range []runtime.Object{nil, stale, current} {
			if err := s.GuaranteedUpdateFrom(ctx, key, nil, false, nil, counted(&seen{}, label), cached); err != nil {
				t.Fatalf("update without a result (cached %v): %v", cached != nil, err)
			}
		}
		got := &corev1.Pod{}
		if err := s.Get(ctx, key, storage.GetOptions{}, got); err != nil {
			t.Fatal(err)
		}
		if got.Labels["touched"] != "yes" || got.Spec.NodeName != "a" {
			t.Fatalf("stored pod %+v", got.ObjectMeta)
		}
	})

	t.Run("a copy of a deleted key", func(t *testing.T) {
		key, _, current := setup(t)
		if err := s.Delete(ctx, key, &corev1.Pod{}, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.GuaranteedUpdateFrom(ctx, key, &corev1.Pod{}, false, nil, counted(&seen{}, label), current); !storage.IsNotFound(err) {
			t.Fatalf("update of a deleted key from its cached copy = %v, want NotFound", err)
		}
	})
}

// BenchmarkGuaranteedUpdate binds one pod over and over: reading the key first, or starting from
// a current cached copy (as the watch cache offers it).
func BenchmarkGuaranteedUpdate(b *testing.B) {
	s := newPodStore(b, env.client(b), storage.EncodingProtobuf)
	ctx := context.Background()
	for _, withCache := range []bool{false, true} {
		b.Run(map[bool]string{false: "read", true: "cached"}[withCache], func(b *testing.B) {
			key := "/registry/bench-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "/pods/default/web"
			pod := makePod("web").obj()
			pod.Spec.Containers = []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}
			current := &corev1.Pod{}
			if err := s.Create(ctx, key, pod, current); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				var cached runtime.Object
				if withCache {
					cached = current
				}
				out := &corev1.Pod{}
				node := "node-" + strconv.Itoa(i)
				if err := s.GuaranteedUpdateFrom(ctx, key, out, false, nil, setNode(node), cached); err != nil {
					b.Fatal(err)
				}
				current = out
			}
		})
	}
}
