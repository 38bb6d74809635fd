package computed

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/storage"
)

func statuses(context.Context) ([]runtime.Object, error) {
	return []runtime.Object{
		&corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: "scheduler"}},
		&corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: "etcd-0"}},
	}, nil
}

func TestStore(t *testing.T) {
	ctx := context.Background()
	s := New(statuses, nil)
	got := &corev1.ComponentStatus{}
	if err := s.Get(ctx, "/registry/core/componentstatuses/etcd-0", storage.GetOptions{}, got); err != nil || got.Name != "etcd-0" {
		t.Fatalf("get = %+v, %v", got, err)
	}
	if err := s.Get(ctx, "/registry/core/componentstatuses/nope", storage.GetOptions{}, got); !storage.IsNotFound(err) {
		t.Fatalf("get missing = %v", err)
	}
	list := &corev1.ComponentStatusList{}
	if err := s.List(ctx, "/registry/core/componentstatuses/", storage.ListOptions{Recursive: true}, list); err != nil || len(list.Items) != 2 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	byName := storage.ListOptions{Recursive: true, Predicate: storage.Predicate{
		Label: labels.Everything(), Field: fields.OneTermEqualSelector("metadata.name", "scheduler"),
		Attrs: func(obj runtime.Object) (labels.Set, fields.Set, error) {
			return nil, fields.Set{"metadata.name": obj.(*corev1.ComponentStatus).Name}, nil
		},
	}}
	if err := s.List(ctx, "/registry/core/componentstatuses/", byName, list); err != nil || len(list.Items) != 1 || list.Items[0].Name != "scheduler" {
		t.Fatalf("selected list = %+v, %v", list, err)
	}
	if err := s.Create(ctx, "k", got, got); err == nil {
		t.Fatal("create succeeded")
	}
	if _, err := s.Watch(ctx, "k", storage.ListOptions{}); err == nil {
		t.Fatal("watch succeeded")
	}
	if n, err := s.Count(ctx, "k"); err != nil || n != 2 {
		t.Fatalf("count = %d, %v", n, err)
	}
}
