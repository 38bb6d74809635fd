package etcd3_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/etcd3"
	"github.com/skiff-sh/skiff/internal/storage/value"
)

// TestEncryptionAtRest: with a transformer, etcd holds sealed values only; every read path (get,
// list, watch) opens them; a value sealed by an older key is rewritten by an unchanged update,
// while a value of the current key is left alone.
func TestEncryptionAtRest(t *testing.T) {
	client := env.client(t)
	ctx := ctxFor(t)
	prefix := prefixFor(t)
	if _, err := client.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil { // an earlier -count run's keys
		t.Fatal(err)
	}
	first, err := value.NewSecretboxConfig(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	store := func(cfgData []byte) *etcd3.Store {
		cfg, err := value.Parse(cfgData)
		if err != nil {
			t.Fatal(err)
		}
		return newPodStore(t, client, "protobuf").WithTransformer(cfg.For("", "secrets"))
	}
	s := store(first)
	w, err := s.Watch(ctx, prefix, storage.ListOptions{Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	key := prefix + "ns/a"
	out := &corev1.Pod{}
	if err := s.Create(ctx, key, makePod("a").label("marker", "plain-marker-value").obj(), out); err != nil {
		t.Fatal(err)
	}
	raw := func() []byte {
		resp, err := client.Get(ctx, key)
		if err != nil || len(resp.Kvs) == 0 {
			t.Fatalf("raw get: %v", err)
		}
		return resp.Kvs[0].Value
	}
	if v := raw(); !bytes.HasPrefix(v, []byte("k8s:enc:secretbox:v1:key-")) || bytes.Contains(v, []byte("plain-marker-value")) {
		t.Fatalf("etcd holds %q", v[:min(len(v), 60)])
	}
	got := &corev1.Pod{}
	if err := s.Get(ctx, key, storage.GetOptions{}, got); err != nil || got.Labels["marker"] != "plain-marker-value" {
		t.Fatalf("get: %v %v", err, got.Labels)
	}
	list := &corev1.PodList{}
	if err := s.List(ctx, prefix, storage.ListOptions{Recursive: true}, list); err != nil || len(list.Items) != 1 || list.Items[0].Labels["marker"] != "plain-marker-value" {
		t.Fatalf("list: %v %+v", err, list.Items)
	}
	select {
	case ev := <-w.ResultChan():
		if pod, ok := ev.Object.(*corev1.Pod); !ok || pod.Labels["marker"] != "plain-marker-value" {
			t.Fatalf("watch event %v %+v", ev.Type, ev.Object)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no watch event")
	}

	unchanged := func(s *etcd3.Store) int64 {
		dest := &corev1.Pod{}
		err := s.GuaranteedUpdate(ctx, key, dest, false, nil, func(obj runtime.Object) (runtime.Object, error) { return obj, nil })
		if err != nil {
			t.Fatal(err)
		}
		resp, _ := client.Get(ctx, key)
		return resp.Kvs[0].ModRevision
	}
	before := unchanged(s)
	if after := unchanged(s); after != before {
		t.Fatalf("an unchanged update of a current value wrote it (revision %d -> %d)", before, after)
	}
	prepared, newKey, err := value.PrepareSecretbox(first, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := value.PromoteSecretbox(prepared, newKey)
	if err != nil {
		t.Fatal(err)
	}
	s2 := store(rotated)
	if err := s2.Get(ctx, key, storage.GetOptions{}, got); err != nil {
		t.Fatalf("the old key's value does not read during rotation: %v", err)
	}
	if after := unchanged(s2); after == before {
		t.Fatal("an unchanged update of a value sealed by the old key did not rewrite it")
	}
	if v := raw(); !strings.HasPrefix(string(v), "k8s:enc:secretbox:v1:"+newKey+":") {
		t.Fatalf("after the rewrite etcd holds %q, want the new key %s", v[:min(len(v), 60)], newKey)
	}
}
