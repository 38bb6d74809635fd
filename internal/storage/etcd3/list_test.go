package etcd3_test

import (
	"fmt"
	"reflect"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/skiff-sh/skiff/internal/storage"
)

func podName(i int) string { return fmt.Sprintf("p%02d", i) }

func TestListPagesAreConsistentUnderConcurrentWrites(t *testing.T) {
	s := newPodStore(t, env.client(t), storage.EncodingProtobuf)
	ctx := ctxFor(t)
	prefix := prefixFor(t)
	var want []string
	for i := 0; i < 10; i++ {
		mustCreate(t, s, prefix+"default/"+podName(i), makePod(podName(i)).obj())
		want = append(want, podName(i))
	}

	var got []string
	var remaining []int64
	continueToken := ""
	listRV := ""
	for page := 0; ; page++ {
		list := &corev1.PodList{}
		err := s.List(ctx, prefix, storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Limit: 3, Continue: continueToken}}, list)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if listRV == "" {
			listRV = list.ResourceVersion
		} else if list.ResourceVersion != listRV {
			t.Fatalf("page %d read at %s, first page at %s", page, list.ResourceVersion, listRV)
		}
		if len(list.Items) > 3 {
			t.Fatalf("page %d has %d items, limit 3", page, len(list.Items))
		}
		got = append(got, names(list.Items)...)
		if list.RemainingItemCount != nil {
			remaining = append(remaining, *list.RemainingItemCount)
		}
		// Writes between pages must not show up in this list.
		mustCreate(t, s, prefix+"default/p00-new"+strconv.Itoa(page), makePod("p00-new"+strconv.Itoa(page)).obj())
		mustCreate(t, s, prefix+"default/z-new"+strconv.Itoa(page), makePod("z-new"+strconv.Itoa(page)).obj())
		if page == 0 {
			if err := s.Delete(ctx, prefix+"default/"+podName(9), &corev1.Pod{}, nil, nil); err != nil {
				t.Fatal(err)
			}
			if err := s.GuaranteedUpdate(ctx, prefix+"default/"+podName(5), &corev1.Pod{}, false, nil, setNode("moved")); err != nil {
				t.Fatal(err)
			}
		}
		if list.Continue == "" {
			break
		}
		continueToken = list.Continue
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("paged list = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(remaining, []int64{7, 4, 1}) {
		t.Fatalf("remainingItemCount per page = %v, want [7 4 1]", remaining)
	}
}

func TestListLimitCountsMatchingItems(t *testing.T) {
	s := newPodStore(t, env.client(t), storage.EncodingProtobuf)
	ctx := ctxFor(t)
	prefix := prefixFor(t)
	var wantWeb []string
	for i := 0; i < 30; i++ {
		b := makePod(podName(i))
		if i%4 == 0 {
			b.label("app", "web")
			wantWeb = append(wantWeb, podName(i))
		}
		mustCreate(t, s, prefix+"default/"+podName(i), b.obj())
	}
	pred := selectLabels(t, "app=web")
	pred.Limit = 3
	var got []string
	for page := 0; ; page++ {
		list := &corev1.PodList{}
		if err := s.List(ctx, prefix, storage.ListOptions{Recursive: true, Predicate: pred}, list); err != nil {
			t.Fatal(err)
		}
		if list.Continue != "" && len(list.Items) != 3 {
			t.Fatalf("page %d has %d items but more follow: limit must count matching items", page, len(list.Items))
		}
		if list.RemainingItemCount != nil {
			t.Fatalf("remainingItemCount %d with a selector: it cannot be known cheaply", *list.RemainingItemCount)
		}
		got = append(got, names(list.Items)...)
		if list.Continue == "" {
			break
		}
		pred.Continue = list.Continue
	}
	if !reflect.DeepEqual(got, wantWeb) {
		t.Fatalf("selected = %v, want %v", got, wantWeb)
	}

	nodePred := storage.Predicate{Field: fields.OneTermEqualSelector("metadata.name", podName(7)), Attrs: podAttrs}
	list := &corev1.PodList{}
	if err := s.List(ctx, prefix, storage.ListOptions{Recursive: true, Predicate: nodePred}, list); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(names(list.Items), []string{podName(7)}) {
		t.Fatalf("field-selected = %v", names(list.Items))
	}
}

func TestListResourceVersionSemantics(t *testing.T) {
	s := newPodStore(t, env.client(t), storage.EncodingProtobuf)
	ctx := ctxFor(t)
	prefix := prefixFor(t)
	first := mustCreate(t, s, prefix+"default/a", makePod("a").obj())
	second := mustCreate(t, s, prefix+"default/b", makePod("b").obj())
	future := strconv.FormatInt(rvOf(t, second)+1000, 10)

	tests := []struct {
		name      string
		rv, match string
		wantNames []string
		wantRV    string
		wantErr   func(error) bool
	}{
		{name: "latest", wantNames: []string{"a", "b"}},
		{name: "any (0)", rv: "0", wantNames: []string{"a", "b"}},
		{name: "exact old revision", rv: first.ResourceVersion, match: "Exact", wantNames: []string{"a"}, wantRV: first.ResourceVersion},
		{name: "not older than", rv: first.ResourceVersion, match: "NotOlderThan", wantNames: []string{"a", "b"}},
		{name: "not older than (no match given)", rv: first.ResourceVersion, wantNames: []string{"a", "b"}},
		{name: "not older than the future", rv: future, match: "NotOlderThan", wantErr: storage.IsTooLargeRevision},
		{name: "exact future", rv: future, match: "Exact", wantErr: storage.IsTooLargeRevision},
		{name: "garbage", rv: "x", wantErr: apierrors.IsBadRequest},
		{name: "unknown match", rv: "1", match: "Sometime", wantErr: apierrors.IsBadRequest},
		{name: "match without rv", match: "Exact", wantErr: apierrors.IsBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list := &corev1.PodList{}
			err := s.List(ctx, prefix, storage.ListOptions{Recursive: true, ResourceVersion: tt.rv, ResourceVersionMatch: tt.match}, list)
			if tt.wantErr != nil {
				if !tt.wantErr(err) {
					t.Fatalf("error = %v, not the expected kind", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(names(list.Items), tt.wantNames) {
				t.Fatalf("items = %v, want %v", names(list.Items), tt.wantNames)
			}
			if tt.wantRV != "" && list.ResourceVersion != tt.wantRV {
				t.Fatalf("list resourceVersion = %s, want %s", list.ResourceVersion, tt.wantRV)
			}
			if rvOf(t, list) < rvOf(t, list.Items[len(list.Items)-1].DeepCopyObject()) {
				t.Fatalf("list resourceVersion %s older than an item", list.ResourceVersion)
			}
		})
	}

	t.Run("single key", func(t *testing.T) {
		list := &corev1.PodList{}
		if err := s.List(ctx, prefix+"default/b", storage.ListOptions{}, list); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(names(list.Items), []string{"b"}) {
			t.Fatalf("items = %v", names(list.Items))
		}
	})

	t.Run("bad continue token", func(t *testing.T) {
		err := s.List(ctx, prefix, storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Limit: 1, Continue: "!!"}}, &corev1.PodList{})
		if !apierrors.IsBadRequest(err) {
			t.Fatalf("error = %v, want BadRequest", err)
		}
	})
}
