package watchcache_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/watchcache"
)

// listFixture writes pods in three namespaces with creates, updates and deletes after the cache has
// started, so the cache's history covers every revision in revs.
func listFixture(t *testing.T, store storage.Interface, root string) (revs []int64) {
	t.Helper()
	note := func(pod *corev1.Pod) { revs = append(revs, rvOf(t, pod)) }
	apps := []string{"web", "db", "cache"}
	for i := range 24 {
		b := makePod(fmt.Sprintf("p%02d", i)).ns("ns"+strconv.Itoa(i%3)).label("app", apps[i%len(apps)]).node("n" + strconv.Itoa(i%4))
		note(mustCreate(t, store, root, b.obj()))
	}
	for i := 0; i < 24; i += 5 {
		key := root + "ns" + strconv.Itoa(i%3) + "/" + fmt.Sprintf("p%02d", i)
		note(mustUpdate(t, store, key, setLabel("app", "web")))
	}
	for i := 1; i < 24; i += 7 {
		key := root + "ns" + strconv.Itoa(i%3) + "/" + fmt.Sprintf("p%02d", i)
		mustDelete(t, store, key)
		rev, err := store.CurrentRevision(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, rev)
	}
	note(mustCreate(t, store, root, makePod("late").ns("ns1").label("app", "db").obj()))
	return revs
}

type listCase struct {
	name   string
	prefix string
	opts   storage.ListOptions
}

func listCases(t *testing.T, root string, revs []int64) []listCase {
	prefixes := []string{root, root + "ns0/", root + "ns1", root + "nsX/"}
	preds := map[string]func() storage.Predicate{
		"all":        func() storage.Predicate { return storage.Predicate{Attrs: podAttrs} },
		"app=web":    func() storage.Predicate { return selectLabels(t, "app=web") },
		"app-in":     func() storage.Predicate { return selectLabels(t, "app in (web,db)") },
		"node=n1":    func() storage.Predicate { return selectFields(t, "spec.nodeName=n1") },
		"none-match": func() storage.Predicate { return selectLabels(t, "app=nothing") },
	}
	type rvMode struct{ name, rv, match string }
	modes := []rvMode{{"consistent", "", ""}, {"any", "0", ""}, {"any-notolder", "0", "NotOlderThan"}}
	for _, rev := range []int64{revs[0], revs[len(revs)/2], revs[len(revs)-3], revs[len(revs)-1]} {
		s := strconv.FormatInt(rev, 10)
		modes = append(modes, rvMode{"exact-" + s, s, "Exact"}, rvMode{"notolder-" + s, s, "NotOlderThan"})
	}
	var cases []listCase
	for _, prefix := range prefixes {
		for predName, pred := range preds {
			for _, mode := range modes {
				for _, limit := range []int64{0, 1, 2, 5, 100} {
					p := pred()
					p.Limit = limit
					cases = append(cases, listCase{
						name:   fmt.Sprintf("%s/%s/%s/limit=%d", prefix[len(root)-1:], predName, mode.name, limit),
						prefix: prefix,
						opts:   storage.ListOptions{Recursive: true, ResourceVersion: mode.rv, ResourceVersionMatch: mode.match, Predicate: p},
					})
				}
			}
		}
	}
	return cases
}

// TestListFromCacheMatchesEtcd compares, page by page, the cache's list with the etcd store's for
// prefixes, selectors, limits and every resourceVersion mode, and checks the cache answered from
// memory (ListShared) wherever it should.
func TestListFromCacheMatchesEtcd(t *testing.T) {
	store := newPodStore(t, env.client(t))
	cache := newCache(t, store, watchcache.Config{})
	root := rootFor(t)
	startWatch(t, cache, root, storage.ListOptions{Recursive: true}) // the cache starts before the writes
	revs := listFixture(t, store, root)
	ctx := context.Background()
	cases := listCases(t, root, revs)
	for _, tc := range cases {
		opts := tc.opts
		for page := 0; ; page++ {
			got, want := &corev1.PodList{}, &corev1.PodList{}
			if err := cache.List(ctx, tc.prefix, opts, got); err != nil {
				t.Fatalf("%s page %d: cache list: %v", tc.name, page, err)
			}
			if err := store.List(ctx, tc.prefix, opts, want); err != nil {
				t.Fatalf("%s page %d: etcd list: %v", tc.name, page, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s page %d:\ncache %s\netcd  %s", tc.name, page, describeList(got), describeList(want))
			}
			shared, served, err := cache.ListShared(ctx, tc.prefix, opts)
			if err != nil || !served {
				t.Fatalf("%s page %d: ListShared served=%v err=%v, want it from memory", tc.name, page, served, err)
			}
			if shared.ResourceVersion != want.ResourceVersion || shared.Continue != want.Continue || len(shared.Items) != len(want.Items) {
				t.Fatalf("%s page %d: shared list rv=%s continue=%q items=%d, want %s", tc.name, page, shared.ResourceVersion, shared.Continue, len(shared.Items), describeList(want))
			}
			for i, item := range shared.Items {
				if !reflect.DeepEqual(item.Object(), &want.Items[i]) {
					t.Fatalf("%s page %d item %d differs", tc.name, page, i)
				}
			}
			if want.Continue == "" {
				break
			}
			opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
			opts.Predicate.Continue = want.Continue
		}
	}
	t.Logf("%d cases compared", len(cases))
}

func describeList(l *corev1.PodList) string {
	names := make([]string, len(l.Items))
	for i, p := range l.Items {
		names[i] = p.Namespace + "/" + p.Name + "@" + p.ResourceVersion
	}
	rem := "nil"
	if l.RemainingItemCount != nil {
		rem = strconv.FormatInt(*l.RemainingItemCount, 10)
	}
	return fmt.Sprintf("rv=%s continue=%q remaining=%s items=%v", l.ResourceVersion, l.Continue, rem, names)
}

// TestConsistentListSeesEveryAcknowledgedWrite: a consistent list right after a write, to this
// resource or to another one, is served from memory and reflects it (the cache asks etcd for
// progress rather than waiting for the periodic notification).
func TestConsistentListSeesEveryAcknowledgedWrite(t *testing.T) {
	store := newPodStore(t, env.client(t))
	cache := newCache(t, store, watchcache.Config{})
	root, other := rootFor(t), rootFor(t)+"x/"
	startWatch(t, cache, root, storage.ListOptions{Recursive: true})
	ctx := context.Background()
	for i := range 20 {
		target := root
		if i%2 == 1 {
			target = other // a write the cache's watch never sees
		}
		written := mustCreate(t, store, target, makePod("p"+strconv.Itoa(i)).obj())
		list, served, err := cache.ListShared(ctx, root, storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Attrs: podAttrs}})
		if err != nil || !served {
			t.Fatalf("write %d: served=%v err=%v, want the list from memory", i, served, err)
		}
		if rev, _ := strconv.ParseInt(list.ResourceVersion, 10, 64); rev < rvOf(t, written) {
			t.Fatalf("write %d at %d: list at %d", i, rvOf(t, written), rev)
		}
		if want := i/2 + 1; len(list.Items) != want {
			t.Fatalf("write %d: %d items, want %d", i, len(list.Items), want)
		}
	}
}

// TestContinueAfterHistoryAndCompaction: a continue token whose revision the cache no longer holds
// is answered by etcd, as without the cache: the next page while etcd has the revision, 410 once it
// is compacted.
func TestContinueAfterHistoryAndCompaction(t *testing.T) {
	client := env.client(t)
	store := newPodStore(t, client)
	cache := newCache(t, store, watchcache.Config{HistorySize: 2})
	root := rootFor(t)
	startWatch(t, cache, root, storage.ListOptions{Recursive: true})
	for i := range 4 {
		mustCreate(t, store, root, makePod("p"+strconv.Itoa(i)).obj())
	}
	ctx := context.Background()
	first := &corev1.PodList{}
	if err := cache.List(ctx, root, storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Limit: 2}}, first); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		mustUpdate(t, store, root+"default/p"+strconv.Itoa(i), setLabel("v", "2"))
	}
	next := storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Limit: 2, Continue: first.Continue}}
	got, want := &corev1.PodList{}, &corev1.PodList{}
	if err := cache.List(ctx, root, next, got); err != nil {
		t.Fatal(err)
	}
	if err := store.List(ctx, root, next, want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || len(got.Items) != 2 || got.Items[0].Labels["v"] != "" {
		t.Fatalf("second page: cache %s, etcd %s", describeList(got), describeList(want))
	}
	latest, err := store.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Compact(ctx, latest); err != nil {
		t.Fatal(err)
	}
	err = cache.List(ctx, root, next, &corev1.PodList{})
	if !storage.IsExpired(err) {
		t.Fatalf("continue after compaction: %v, want Expired", err)
	}
	// The same list at the latest revision is still served from memory.
	if _, served, err := cache.ListShared(ctx, root, storage.ListOptions{Recursive: true, ResourceVersion: strconv.FormatInt(latest, 10), ResourceVersionMatch: string(metav1.ResourceVersionMatchExact)}); err != nil || !served {
		t.Fatalf("exact list at %d: served=%v err=%v", latest, served, err)
	}
}

// TestInconsistentContinueAfterCompaction: the continue token an expired page's error offers
// resumes at the same key at the latest revision, and its remainingItemCount counts only the keys
// after the page (Kubernetes' chunking conformance spec adds them up).
func TestInconsistentContinueAfterCompaction(t *testing.T) {
	client := env.client(t)
	store := newPodStore(t, client)
	cache := newCache(t, store, watchcache.Config{HistorySize: 2})
	root := rootFor(t)
	startWatch(t, cache, root, storage.ListOptions{Recursive: true})
	for i := range 10 {
		mustCreate(t, store, root, makePod(fmt.Sprintf("p%02d", i)).obj())
	}
	ctx := context.Background()
	first := &corev1.PodList{}
	if err := cache.List(ctx, root, storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Limit: 2}}, first); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		mustUpdate(t, store, root+fmt.Sprintf("default/p%02d", i), setLabel("v", "2"))
	}
	latest, err := store.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Compact(ctx, latest); err != nil {
		t.Fatal(err)
	}
	err = cache.List(ctx, root, storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Limit: 2, Continue: first.Continue}}, &corev1.PodList{})
	var se *storage.Error
	if !errors.As(err, &se) || !storage.IsExpired(err) || se.Continue == "" {
		t.Fatalf("continue after compaction: %v, want Expired with a continue token", err)
	}
	for name, lister := range map[string]storage.Interface{"cache": cache, "etcd": store} {
		page := &corev1.PodList{}
		if err := lister.List(ctx, root, storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Limit: 2, Continue: se.Continue}}, page); err != nil {
			t.Fatalf("%s: inconsistent continue: %v", name, err)
		}
		if len(page.Items) != 2 || page.Items[0].Name != "p02" || page.Items[0].Labels["v"] != "2" {
			t.Fatalf("%s: page %s", name, describeList(page))
		}
		if page.RemainingItemCount == nil || *page.RemainingItemCount != 6 {
			t.Fatalf("%s: remainingItemCount %v, want 6 (10 pods, 2 before and 2 in this page)", name, page.RemainingItemCount)
		}
	}
}

// TestContinueExpiresWhenEtcdCompacts: a cache whose history still holds a continue token's
// revision must not answer it once etcd has compacted that revision: the list expires (410 with an
// inconsistent-continue token), as Kubernetes' chunking conformance spec waits for, and the pages
// after the inconsistent one count down to the end. Before, the cache kept serving the compacted
// revision from its history, so the spec's token never expired and it fell back to listing from
// the start (remainingItemCount 40 too high).
func TestContinueExpiresWhenEtcdCompacts(t *testing.T) {
	client := env.client(t)
	store := newPodStore(t, client)
	cache := newCache(t, store, watchcache.Config{HistorySize: 1000})
	root := rootFor(t)
	startWatch(t, cache, root, storage.ListOptions{Recursive: true})
	for i := range 10 {
		mustCreate(t, store, root, makePod(fmt.Sprintf("p%02d", i)).obj())
	}
	ctx := context.Background()
	paged := func(cont string) storage.ListOptions {
		return storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Limit: 2, Continue: cont}}
	}
	first := &corev1.PodList{}
	if err := cache.List(ctx, root, paged(""), first); err != nil {
		t.Fatal(err)
	}
	// Served from the history while etcd has the revision.
	if err := cache.List(ctx, root, paged(first.Continue), &corev1.PodList{}); err != nil {
		t.Fatalf("continue before compaction: %v", err)
	}
	mustUpdate(t, store, root+"default/p09", setLabel("v", "2"))
	latest, err := store.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Compact(ctx, latest); err != nil {
		t.Fatal(err)
	}
	err = cache.List(ctx, root, paged(first.Continue), &corev1.PodList{})
	var se *storage.Error
	if !errors.As(err, &se) || !storage.IsExpired(err) || se.Continue == "" {
		t.Fatalf("continue after compaction: %v, want Expired with a continue token", err)
	}
	seen, cont := 2, se.Continue
	for cont != "" {
		page := &corev1.PodList{}
		if err := cache.List(ctx, root, paged(cont), page); err != nil {
			t.Fatalf("page after %d items: %v", seen, err)
		}
		if len(page.Items) == 0 || page.Items[0].Name != fmt.Sprintf("p%02d", seen) {
			t.Fatalf("page after %d items: %s", seen, describeList(page))
		}
		seen += len(page.Items)
		if page.Continue != "" && (page.RemainingItemCount == nil || int(*page.RemainingItemCount) != 10-seen) {
			t.Fatalf("page up to %d: remainingItemCount %v, want %d", seen, page.RemainingItemCount, 10-seen)
		}
		cont = page.Continue
	}
	if seen != 10 {
		t.Fatalf("listed %d items, want 10", seen)
	}
}
