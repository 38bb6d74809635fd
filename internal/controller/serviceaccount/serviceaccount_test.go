package serviceaccount

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

func TestDefaultServiceAccount(t *testing.T) {
	now := metav1.NewTime(ctrltest.Epoch())
	active := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	terminating := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", DeletionTimestamp: &now}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	existing := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "team"}}
	other := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: "team"}}
	tests := []struct {
		name string
		ns   *corev1.Namespace
		sas  []*corev1.ServiceAccount
		want []string
	}{
		{"missing: created", active, nil, []string{"create serviceaccounts default"}},
		{"only another account: created", active, []*corev1.ServiceAccount{other}, []string{"create serviceaccounts default"}},
		{"present: nothing", active, []*corev1.ServiceAccount{existing}, nil},
		{"terminating namespace: nothing", terminating, nil, nil},
		{"namespace gone: nothing", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			if tt.ns != nil {
				objs = append(objs, tt.ns)
			}
			for _, sa := range tt.sas {
				objs = append(objs, sa)
			}
			env := ctrltest.NewEnv(objs...)
			c, err := New(env.Deps)
			if err != nil {
				t.Fatal(err)
			}
			if tt.ns != nil {
				ctrltest.Seed(t, env.Factory.Core().V1().Namespaces().Informer(), tt.ns)
			}
			for _, sa := range tt.sas {
				ctrltest.Seed(t, env.Factory.Core().V1().ServiceAccounts().Informer(), sa)
			}
			if err := c.Sync(context.Background(), "team"); err != nil {
				t.Fatal(err)
			}
			if got := ctrltest.Describe(env.Writes()); !slices.Equal(got, tt.want) {
				t.Fatalf("actions %q, want %q", got, tt.want)
			}
		})
	}
}
