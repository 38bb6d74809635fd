package etcd3_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/internal/apiserver/store"
	"github.com/skiff-sh/skiff/internal/storage"
)

var podsResource = schema.GroupResource{Resource: "pods"}

func TestCreateGetAndDuplicate(t *testing.T) {
	for _, encoding := range []string{storage.EncodingJSON, storage.EncodingProtobuf} {
		t.Run(encoding, func(t *testing.T) {
			s := newPodStore(t, env.client(t), encoding)
			ctx := ctxFor(t)
			key := prefixFor(t) + "default/web"
			created := mustCreate(t, s, key, makePod("web").label("app", "web").obj())
			if rvOf(t, created) == 0 || created.Name != "web" || created.Labels["app"] != "web" {
				t.Fatalf("created = %+v", created.ObjectMeta)
			}
			if created.Kind != "Pod" || created.APIVersion != "v1" {
				t.Errorf("type meta = %q/%q, want v1/Pod", created.APIVersion, created.Kind)
			}

			got := &corev1.Pod{}
			if err := s.Get(ctx, key, storage.GetOptions{}, got); err != nil {
				t.Fatalf("get: %v", err)
			}
			if got.ResourceVersion != created.ResourceVersion || got.Spec.Containers[0].Image != "nginx:1.27" {
				t.Fatalf("get = %+v, want %+v", got, created)
			}

			err := s.Create(ctx, key, makePod("web").obj(), &corev1.Pod{})
			if !storage.IsExists(err) {
				t.Fatalf("duplicate create error = %v, want Exists", err)
			}
			if status := store.ToAPIError(err, podsResource, "web"); !apierrors.IsAlreadyExists(status) {
				t.Fatalf("api error = %v, want AlreadyExists", status)
			}

			withRV := makePod("other").obj()
			withRV.ResourceVersion = "5"
			if err := s.Create(ctx, prefixFor(t)+"default/other", withRV, &corev1.Pod{}); !apierrors.IsBadRequest(err) {
				t.Fatalf("create with resourceVersion error = %v, want BadRequest", err)
			}
		})
	}
}

func TestGetMissingAndAtRevision(t *testing.T) {
	s := newPodStore(t, env.client(t), storage.EncodingProtobuf)
	ctx := ctxFor(t)
	key := prefixFor(t) + "default/web"

	err := s.Get(ctx, key, storage.GetOptions{}, &corev1.Pod{})
	if !storage.IsNotFound(err) {
		t.Fatalf("get missing = %v, want NotFound", err)
	}
	zero := makePod("leftover").obj()
	if err := s.Get(ctx, key, storage.GetOptions{IgnoreNotFound: true}, zero); err != nil || zero.Name != "" {
		t.Fatalf("get missing ignoring not found = %v, %+v; want a zero object", err, zero.ObjectMeta)
	}

	v1 := mustCreate(t, s, key, makePod("web").node("a").obj())
	v2 := &corev1.Pod{}
	if err := s.GuaranteedUpdate(ctx, key, v2, false, nil, func(cur runtime.Object) (runtime.Object, error) {
		cur.(*corev1.Pod).Spec.NodeName = "b"
		return cur, nil
	}); err != nil {
		t.Fatalf("update: %v", err)
	}
	old := &corev1.Pod{}
	if err := s.Get(ctx, key, storage.GetOptions{ResourceVersion: v1.ResourceVersion}, old); err != nil {
		t.Fatalf("get at %s: %v", v1.ResourceVersion, err)
	}
	if old.Spec.NodeName != "a" || old.ResourceVersion != v1.ResourceVersion {
		t.Fatalf("get at old revision = node %q rv %s, want a %s", old.Spec.NodeName, old.ResourceVersion, v1.ResourceVersion)
	}
	cached := &corev1.Pod{}
	if err := s.Get(ctx, key, storage.GetOptions{ResourceVersion: "0"}, cached); err != nil || cached.Spec.NodeName != "b" {
		t.Fatalf("get rv=0 = %v node %q", err, cached.Spec.NodeName)
	}

	future := strconv.FormatInt(rvOf(t, v2)+1000, 10)
	err = s.Get(ctx, key, storage.GetOptions{ResourceVersion: future}, &corev1.Pod{})
	if !storage.IsTooLargeRevision(err) {
		t.Fatalf("get at future revision = %v, want TooLargeRevision", err)
	}
	var se *storage.Error
	if !errors.As(err, &se) || se.Revision < rvOf(t, v2) {
		t.Fatalf("too-large error %+v should carry the current revision", se)
	}
	if err := s.Get(ctx, key, storage.GetOptions{ResourceVersion: "abc"}, &corev1.Pod{}); !apierrors.IsBadRequest(err) {
		t.Fatalf("get with bad resourceVersion = %v, want BadRequest", err)
	}
}

func setNode(node string) storage.UpdateFunc {
	return func(cur runtime.Object) (runtime.Object, error) {
		cur.(*corev1.Pod).Spec.NodeName = node
		return cur, nil
	}
}

func TestGuaranteedUpdate(t *testing.T) {
	s := newPodStore(t, env.client(t), storage.EncodingProtobuf)
	ctx := ctxFor(t)
	key := prefixFor(t) + "default/web"
	created := mustCreate(t, s, key, makePod("web").obj())

	t.Run("stale resourceVersion is an optimistic-lock conflict", func(t *testing.T) {
		updated := &corev1.Pod{}
		if err := s.GuaranteedUpdate(ctx, key, updated, false, nil, setNode("a")); err != nil {
			t.Fatalf("update: %v", err)
		}
		if rvOf(t, updated) <= rvOf(t, created) {
			t.Fatalf("resourceVersion did not grow: %s -> %s", created.ResourceVersion, updated.ResourceVersion)
		}
		err := s.GuaranteedUpdate(ctx, key, &corev1.Pod{}, false,
			&storage.Preconditions{ResourceVersion: ptr(created.ResourceVersion)}, setNode("b"))
		if !storage.IsConflict(err) {
			t.Fatalf("stale update = %v, want Conflict", err)
		}
		status := store.ToAPIError(err, podsResource, "web")
		want := `Operation cannot be fulfilled on pods "web": the object has been modified; please apply your changes to the latest version and try again`
		if !apierrors.IsConflict(status) || status.Error() != want {
			t.Fatalf("api error = %q, want %q", status, want)
		}
	})

	t.Run("uid precondition", func(t *testing.T) {
		err := s.GuaranteedUpdate(ctx, key, &corev1.Pod{}, false,
			&storage.Preconditions{UID: ptr(types.UID("other"))}, setNode("b"))
		var se *storage.Error
		if !errors.As(err, &se) || se.Code != storage.ErrCodeConflict || !se.Precondition {
			t.Fatalf("uid mismatch = %v, want a precondition Conflict", err)
		}
		want := `Operation cannot be fulfilled on pods "web": StorageError: invalid object, Code: 4, Key: ` + key +
			`, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: other, UID in object meta: uid-web`
		if got := store.ToAPIError(err, podsResource, "web").Error(); got != want {
			t.Fatalf("message = %q\nwant      %q", got, want)
		}
	})

	t.Run("no-op update writes nothing", func(t *testing.T) {
		before := &corev1.Pod{}
		if err := s.Get(ctx, key, storage.GetOptions{}, before); err != nil {
			t.Fatal(err)
		}
		after := &corev1.Pod{}
		if err := s.GuaranteedUpdate(ctx, key, after, false, nil, setNode(before.Spec.NodeName)); err != nil {
			t.Fatalf("no-op update: %v", err)
		}
		if after.ResourceVersion != before.ResourceVersion {
			t.Fatalf("no-op update changed resourceVersion %s -> %s", before.ResourceVersion, after.ResourceVersion)
		}
	})

	t.Run("tryUpdate error is returned unchanged", func(t *testing.T) {
		boom := apierrors.NewBadRequest("nope")
		err := s.GuaranteedUpdate(ctx, key, &corev1.Pod{}, false, nil, func(runtime.Object) (runtime.Object, error) {
			return nil, boom
		})
		if err != boom {
			t.Fatalf("error = %v, want the tryUpdate error", err)
		}
	})

	t.Run("missing key", func(t *testing.T) {
		missing := prefixFor(t) + "default/missing"
		if err := s.GuaranteedUpdate(ctx, missing, &corev1.Pod{}, false, nil, setNode("a")); !storage.IsNotFound(err) {
			t.Fatalf("update of missing key = %v, want NotFound", err)
		}
		out := &corev1.Pod{}
		err := s.GuaranteedUpdate(ctx, missing, out, true, nil, func(cur runtime.Object) (runtime.Object, error) {
			pod := cur.(*corev1.Pod)
			if pod.Name != "" {
				t.Errorf("ignoreNotFound should pass a zero object, got %q", pod.Name)
			}
			return makePod("missing").obj(), nil
		})
		if err != nil || out.Name != "missing" || out.ResourceVersion == "" {
			t.Fatalf("upsert = %v, %+v", err, out.ObjectMeta)
		}
	})

	t.Run("concurrent writers all land", func(t *testing.T) {
		counterKey := prefixFor(t) + "default/counter"
		mustCreate(t, s, counterKey, makePod("counter").obj())
		const writers, perWriter = 4, 5
		var wg sync.WaitGroup
		errs := make(chan error, writers*perWriter)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < perWriter; i++ {
					errs <- s.GuaranteedUpdate(context.Background(), counterKey, &corev1.Pod{}, false, nil,
						func(cur runtime.Object) (runtime.Object, error) {
							pod := cur.(*corev1.Pod)
							n, _ := strconv.Atoi(pod.Annotations["count"])
							pod.Annotations = map[string]string{"count": strconv.Itoa(n + 1)}
							return pod, nil
						})
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("concurrent update: %v", err)
			}
		}
		final := &corev1.Pod{}
		if err := s.Get(ctx, counterKey, storage.GetOptions{}, final); err != nil {
			t.Fatal(err)
		}
		if final.Annotations["count"] != strconv.Itoa(writers*perWriter) {
			t.Fatalf("count = %s, want %d: an update was lost", final.Annotations["count"], writers*perWriter)
		}
	})
}

func TestDelete(t *testing.T) {
	s := newPodStore(t, env.client(t), storage.EncodingProtobuf)
	ctx := ctxFor(t)
	key := prefixFor(t) + "default/web"
	created := mustCreate(t, s, key, makePod("web").obj())

	tests := []struct {
		name          string
		preconditions *storage.Preconditions
		validate      storage.ValidateObjectFunc
		wantMsg       string
	}{
		{
			name:          "stale resourceVersion",
			preconditions: &storage.Preconditions{ResourceVersion: ptr("1")},
			wantMsg: `Operation cannot be fulfilled on pods "web": StorageError: invalid object, Code: 4, Key: ` + key +
				`, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: ` + created.ResourceVersion,
		},
		{
			name:          "wrong uid",
			preconditions: &storage.Preconditions{UID: ptr(types.UID("x"))},
			wantMsg: `Operation cannot be fulfilled on pods "web": StorageError: invalid object, Code: 4, Key: ` + key +
				`, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: x, UID in object meta: uid-web`,
		},
		{
			name: "validation refuses",
			validate: func(_ context.Context, cur runtime.Object) error {
				return apierrors.NewForbidden(podsResource, cur.(*corev1.Pod).Name, errors.New("protected"))
			},
			wantMsg: `pods "web" is forbidden: protected`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Delete(ctx, key, &corev1.Pod{}, tt.preconditions, tt.validate)
			if got := store.ToAPIError(err, podsResource, "web"); got == nil || got.Error() != tt.wantMsg {
				t.Fatalf("delete error = %v\nwant %s", got, tt.wantMsg)
			}
		})
	}

	last := &corev1.Pod{}
	err := s.Delete(ctx, key, last, &storage.Preconditions{ResourceVersion: ptr(created.ResourceVersion), UID: ptr(created.UID)}, nil)
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	if last.Name != "web" || rvOf(t, last) <= rvOf(t, created) {
		t.Fatalf("deleted object = %s rv %s, want web with the deletion revision", last.Name, last.ResourceVersion)
	}
	if err := s.Delete(ctx, key, &corev1.Pod{}, nil, nil); !storage.IsNotFound(err) {
		t.Fatalf("second delete = %v, want NotFound", err)
	}
}

func TestDecodingAcceptsBothEncodings(t *testing.T) {
	client := env.client(t)
	jsonStore := newPodStore(t, client, storage.EncodingJSON)
	protoStore := newPodStore(t, client, storage.EncodingProtobuf)
	ctx := ctxFor(t)
	key := prefixFor(t) + "default/web"
	mustCreate(t, jsonStore, key, makePod("web").label("a", "b").obj())
	got := &corev1.Pod{}
	if err := protoStore.Get(ctx, key, storage.GetOptions{}, got); err != nil || got.Labels["a"] != "b" {
		t.Fatalf("protobuf store reading JSON = %v, %+v", err, got.ObjectMeta)
	}
	if err := protoStore.GuaranteedUpdate(ctx, key, &corev1.Pod{}, false, nil, setNode("n1")); err != nil {
		t.Fatal(err)
	}
	if err := jsonStore.Get(ctx, key, storage.GetOptions{}, got); err != nil || got.Spec.NodeName != "n1" {
		t.Fatalf("JSON store reading protobuf = %v, node %q", err, got.Spec.NodeName)
	}
}

func TestCountRevisionReady(t *testing.T) {
	s := newPodStore(t, env.client(t), storage.EncodingProtobuf)
	ctx := ctxFor(t)
	prefix := prefixFor(t)
	for i := 0; i < 3; i++ {
		mustCreate(t, s, prefix+"default/p"+strconv.Itoa(i), makePod("p"+strconv.Itoa(i)).obj())
	}
	last := mustCreate(t, s, prefix+"other/q", makePod("q").obj())
	if n, err := s.Count(ctx, prefix); err != nil || n != 4 {
		t.Fatalf("count = %d, %v; want 4", n, err)
	}
	if n, err := s.Count(ctx, prefix+"default"); err != nil || n != 3 {
		t.Fatalf("count in namespace = %d, %v; want 3", n, err)
	}
	if rev, err := s.CurrentRevision(ctx); err != nil || rev < rvOf(t, last) {
		t.Fatalf("current revision = %d, %v; want >= %d", rev, err, rvOf(t, last))
	}
	if err := s.Ready(ctx); err != nil {
		t.Fatalf("ready: %v", err)
	}
}
