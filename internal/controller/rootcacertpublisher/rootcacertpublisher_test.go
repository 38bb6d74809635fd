package rootcacertpublisher

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

const bundle = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func TestPublish(t *testing.T) {
	now := metav1.NewTime(ctrltest.Epoch())
	active := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	terminating := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", DeletionTimestamp: &now}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	current := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: "team"}, Data: map[string]string{DataKey: bundle}}
	stale := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: "team"}, Data: map[string]string{DataKey: "old", "extra": "x"}}
	tests := []struct {
		name string
		ns   *corev1.Namespace
		cm   *corev1.ConfigMap
		want []string
	}{
		{"missing: created", active, nil, []string{"create configmaps " + ConfigMapName}},
		{"current: nothing", active, current, nil},
		{"edited: restored", active, stale, []string{"update configmaps " + ConfigMapName}},
		{"terminating namespace: nothing", terminating, nil, nil},
		{"namespace gone: nothing", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			if tt.ns != nil {
				objs = append(objs, tt.ns)
			}
			if tt.cm != nil {
				objs = append(objs, tt.cm)
			}
			env := ctrltest.NewEnv(objs...)
			c, err := New(env.Deps, []byte(bundle))
			if err != nil {
				t.Fatal(err)
			}
			if tt.ns != nil {
				ctrltest.Seed(t, env.Factory.Core().V1().Namespaces().Informer(), tt.ns)
			}
			if tt.cm != nil {
				ctrltest.Seed(t, env.Factory.Core().V1().ConfigMaps().Informer(), tt.cm)
			}
			if err := c.Sync(context.Background(), "team"); err != nil {
				t.Fatal(err)
			}
			writes := env.Writes()
			if got := ctrltest.Describe(writes); !slices.Equal(got, tt.want) {
				t.Fatalf("actions %q, want %q", got, tt.want)
			}
			for _, a := range writes {
				obj := a.(interface{ GetObject() runtime.Object }).GetObject().(*corev1.ConfigMap)
				if obj.Data[DataKey] != bundle || len(obj.Data) != 1 {
					t.Fatalf("published data %v", obj.Data)
				}
				_ = clienttesting.Action(a)
			}
		})
	}
}

func TestRequiresBundle(t *testing.T) {
	if _, err := New(ctrltest.NewEnv().Deps, nil); err == nil {
		t.Fatal("built without a CA bundle")
	}
}

// TestPublishFollowsTheFile: a publisher built on the bundle's file takes a new bundle (a CA
// rotation's) when the file changes, and the next sync writes it; a file caught without a
// certificate keeps the bundle published.
func TestPublishFollowsTheFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(file, []byte(bundle), 0o600); err != nil {
		t.Fatal(err)
	}
	active := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	current := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: "team"}, Data: map[string]string{DataKey: bundle}}
	env := ctrltest.NewEnv(active, current)
	c, err := NewFollowing(env.Deps, file, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Core().V1().Namespaces().Informer(), active)
	ctrltest.Seed(t, env.Factory.Core().V1().ConfigMaps().Informer(), current)
	if c.refresh() {
		t.Fatal("an unchanged file changed the bundle")
	}
	rotated := bundle + "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n"
	if err := os.WriteFile(file, []byte(rotated), 0o600); err != nil {
		t.Fatal(err)
	}
	if !c.refresh() {
		t.Fatal("the rotated bundle was not taken")
	}
	if err := c.Sync(context.Background(), "team"); err != nil {
		t.Fatal(err)
	}
	writes := env.Writes()
	if got := ctrltest.Describe(writes); !slices.Equal(got, []string{"update configmaps " + ConfigMapName}) {
		t.Fatalf("actions %q, want the update", got)
	}
	if obj := writes[0].(interface{ GetObject() runtime.Object }).GetObject().(*corev1.ConfigMap); obj.Data[DataKey] != rotated {
		t.Fatalf("published %q, want the rotated bundle", obj.Data[DataKey])
	}
	if err := os.WriteFile(file, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c.refresh() || *c.rootCA.Load() != rotated {
		t.Fatal("a file without a certificate replaced the bundle")
	}
}
