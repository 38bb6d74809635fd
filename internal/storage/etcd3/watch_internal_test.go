package etcd3

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
	"github.com/skiff-sh/skiff/internal/storage"
)

// TestProgressBeforeCompactionIsNoBookmark: a progress notification that reaches a watch before
// etcd answered that its start was compacted (the robustness suite saw it after restores from a
// snapshot) ends the watch with 410, not a bookmark past revisions it never delivered; once a
// watch's start is known to be served, progress notifications are bookmarks.
func TestProgressBeforeCompactionIsNoBookmark(t *testing.T) {
	m := etcdtest.StartEmbedded(t, etcdtest.Options{})
	client := etcdtest.Client(t, m)
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	codec, err := storage.NewCodec(scheme, corev1.SchemeGroupVersion, "json")
	if err != nil {
		t.Fatal(err)
	}
	s := New(client, codec, func() runtime.Object { return &corev1.Pod{} }, func() runtime.Object { return &corev1.PodList{} })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rev int64
	for i := range 5 {
		resp, err := client.Put(ctx, fmt.Sprintf("/pods/p%d", i), "x")
		if err != nil {
			t.Fatal(err)
		}
		rev = resp.Header.Revision
	}
	if _, err := client.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	progress := clientv3.WatchResponse{Header: &etcdserverpb.ResponseHeader{Revision: rev + 10}}
	if !progress.IsProgressNotify() {
		t.Fatal("the fixture is no progress notification")
	}
	for _, tc := range []struct {
		name      string
		requested int64
		want      watch.EventType
	}{
		{"start compacted", rev - 3, watch.Error},
		{"start at the current revision", rev, watch.Bookmark},
	} {
		w := &watcher{store: s, key: "/pods/", opts: storage.ListOptions{ProgressNotify: true}, requested: tc.requested,
			result: make(chan watch.Event, 4), cancel: func() {}}
		goOn := w.handle(ctx, progress)
		select {
		case ev := <-w.result:
			if ev.Type != tc.want {
				t.Fatalf("%s: %s %+v, want %s", tc.name, ev.Type, ev.Object, tc.want)
			}
			if st, ok := ev.Object.(*metav1.Status); ok && st.Code != http.StatusGone {
				t.Fatalf("%s: status %d, want 410", tc.name, st.Code)
			}
			if goOn != (tc.want == watch.Bookmark) {
				t.Fatalf("%s: the watch goes on = %v", tc.name, goOn)
			}
		default:
			t.Fatalf("%s: nothing sent", tc.name)
		}
	}
}
