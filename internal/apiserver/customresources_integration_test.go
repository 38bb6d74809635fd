package apiserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/skiff-sh/skiff/internal/registry"
)

var (
	crdsGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

const widgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}, scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}}
    selectableFields: [{jsonPath: .spec.size}]
    additionalPrinterColumns:
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Size, type: string, jsonPath: .spec.size}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer, default: 1}
              size: {type: string}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
          status:
            type: object
            properties:
              replicas: {type: integer}
`

func unstructuredFrom(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	data, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestCustomResources drives a CustomResourceDefinition through client-go against the API server
// on real etcd: established live, custom resources served with their schema, then deleted with it.
func TestCustomResources(t *testing.T) {
	c := startTestCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.api.RunCustomResources(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	ns := c.namespace(t, "crs")

	crds := c.dynamic.Resource(crdsGVR)
	if _, err := crds.Create(ctx, unstructuredFrom(t, widgetCRD), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd, err := crds.Get(ctx, "widgets.example.com", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, cond := range conds {
			m := cond.(map[string]interface{})
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("definition not established: %v", err)
	}

	widgets := c.dynamic.Resource(widgetsGVR).Namespace(ns)
	t.Run("create prunes and defaults", func(t *testing.T) {
		w, err := widgets.Create(ctx, unstructuredFrom(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"size":"big","bogus":1},"status":{"replicas":9}}`), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spec, _, _ := unstructured.NestedMap(w.Object, "spec")
		if spec["replicas"] != int64(1) || spec["bogus"] != nil || w.Object["status"] != nil || w.GetGeneration() != 1 || len(w.GetManagedFields()) != 1 {
			t.Fatalf("created %v", w.Object)
		}
	})
	t.Run("unknown fields refused under Strict", func(t *testing.T) {
		_, err := widgets.Create(ctx, unstructuredFrom(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"s"},"spec":{"bogus":1}}`), metav1.CreateOptions{FieldValidation: "Strict"})
		wantStatus(t, err, 400, `Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.bogus"`)
	})
	t.Run("watch", func(t *testing.T) {
		w, err := widgets.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=a"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		ev := <-w.ResultChan()
		if u, ok := ev.Object.(*unstructured.Unstructured); !ok || ev.Type != "ADDED" || u.GetName() != "a" || u.GetKind() != "Widget" {
			t.Fatalf("first event %s %#v", ev.Type, ev.Object)
		}
	})
	t.Run("schema violation refused with the schema's message", func(t *testing.T) {
		_, err := widgets.Create(ctx, unstructuredFrom(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"b"},"spec":{"replicas":"string"}}`), metav1.CreateOptions{})
		wantStatus(t, err, 422, `spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`)
	})
	t.Run("patches", func(t *testing.T) {
		force := true
		w, err := widgets.Patch(ctx, "a", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n, _, _ := unstructured.NestedInt64(w.Object, "spec", "replicas"); n != 3 || w.GetGeneration() != 2 {
			t.Fatalf("patched %v", w.Object)
		}
		_, err = widgets.Patch(ctx, "a", types.StrategicMergePatchType, []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{})
		if !apierrors.IsUnsupportedMediaType(err) {
			t.Fatalf("strategic merge patch: %v", err)
		}
		w, err = widgets.Patch(ctx, "a", types.ApplyYAMLPatchType, []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"size":"small"}}`), metav1.PatchOptions{FieldManager: "test", Force: &force})
		if err != nil {
			t.Fatal(err)
		}
		if s, _, _ := unstructured.NestedString(w.Object, "spec", "size"); s != "small" {
			t.Fatalf("applied %v", w.Object)
		}
	})
	t.Run("server-side apply merges lists by their map keys", func(t *testing.T) {
		force := true
		for _, apply := range []struct{ manager, port string }{{"one", `{"name":"a","port":1}`}, {"two", `{"name":"b","port":2}`}} {
			_, err := widgets.Patch(ctx, "a", types.ApplyYAMLPatchType,
				[]byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"ports":[`+apply.port+`]}}`),
				metav1.PatchOptions{FieldManager: apply.manager, Force: &force})
			if err != nil {
				t.Fatal(err)
			}
		}
		w, err := widgets.Get(ctx, "a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ports, _, _ := unstructured.NestedSlice(w.Object, "spec", "ports"); len(ports) != 2 {
			t.Fatalf("ports after two appliers: %v", ports)
		}
	})
	t.Run("field selectors", func(t *testing.T) {
		for selector, want := range map[string]int{"spec.size=small": 1, "spec.size=big": 0, "metadata.name=a": 1} {
			list, err := widgets.List(ctx, metav1.ListOptions{FieldSelector: selector})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != want {
				t.Fatalf("%s: %d items, want %d", selector, len(list.Items), want)
			}
		}
		_, err := widgets.List(ctx, metav1.ListOptions{FieldSelector: "spec.replicas=1"})
		if !apierrors.IsBadRequest(err) {
			t.Fatalf("selector on an undeclared field: %v", err)
		}
	})
	t.Run("status and scale", func(t *testing.T) {
		w, err := widgets.Get(ctx, "a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(w.Object, int64(3), "status", "replicas")
		if _, err := widgets.UpdateStatus(ctx, w, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		scale, err := widgets.Get(ctx, "a", metav1.GetOptions{}, "scale")
		if err != nil {
			t.Fatal(err)
		}
		if n, _, _ := unstructured.NestedInt64(scale.Object, "status", "replicas"); n != 3 {
			t.Fatalf("scale %v", scale.Object)
		}
	})
	t.Run("table and discovery", func(t *testing.T) {
		table := &metav1.Table{}
		if err := c.client.CoreV1().RESTClient().Get().AbsPath("/apis/example.com/v1/namespaces/"+ns+"/widgets").
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(table); err != nil {
			t.Fatal(err)
		}
		var columns []string
		for _, col := range table.ColumnDefinitions {
			columns = append(columns, col.Name)
		}
		if got := strings.Join(columns, ","); got != "Name,Replicas,Size" || len(table.Rows) != 1 || table.Rows[0].Cells[1] != int64(3) {
			t.Fatalf("columns %s, rows %+v", got, table.Rows)
		}
		list, err := c.client.Discovery().ServerResourcesForGroupVersion("example.com/v1")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range list.APIResources {
			names = append(names, r.Name)
		}
		if got := strings.Join(names, ","); got != "widgets,widgets/scale,widgets/status" {
			t.Fatalf("discovery %s", got)
		}
	})
	t.Run("a kind already held is a name conflict", func(t *testing.T) {
		clash := strings.Replace(widgetCRD, "widgets", "doohickeys", -1)
		clash = strings.Replace(clash, "singular: widget, ", "", 1)
		clash = strings.Replace(clash, "shortNames: [wd], ", "", 1)
		if _, err := crds.Create(ctx, unstructuredFrom(t, clash), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			crd, err := crds.Get(ctx, "doohickeys.example.com", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, cond := range conds {
				m := cond.(map[string]interface{})
				if m["type"] == "NamesAccepted" && m["status"] == "False" && m["reason"] == "NameConflict" && m["message"] == `"Widget" is already in use` {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			crd, _ := crds.Get(ctx, "doohickeys.example.com", metav1.GetOptions{})
			w, _ := crds.Get(ctx, "widgets.example.com", metav1.GetOptions{})
			t.Fatalf("no NameConflict: %v %v\nwidgets: %v", err, crd.Object["status"], w.Object["status"])
		}
		if _, err := c.dynamic.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "doohickeys"}).Namespace(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("a definition whose names clash is served: %v", err)
		}
		if err := crds.Delete(ctx, "doohickeys.example.com", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("versions convert with None", func(t *testing.T) {
		two := strings.Replace(strings.Replace(widgetCRD, "widgets", "gadgets", -1), "Widget", "Gadget", -1)
		two = strings.Replace(two, "  versions:\n", `  versions:
  - name: v1beta1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, 1)
		two = strings.Replace(two, "categories: [all]", "categories: [all], shortNames: [gd]", 1)
		two = strings.Replace(two, "shortNames: [wd], ", "", 1)
		if _, err := crds.Create(ctx, unstructuredFrom(t, two), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var lastErr error
		beta := c.dynamic.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "gadgets"}).Namespace(ns)
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := beta.Create(ctx, unstructuredFrom(t, `{"apiVersion":"example.com/v1beta1","kind":"Gadget","metadata":{"name":"g"},"spec":{"replicas":2}}`), metav1.CreateOptions{})
			if err != nil && (lastErr == nil || lastErr.Error() != err.Error()) {
				t.Logf("create: %v", err)
			}
			lastErr = err
			return err == nil, nil
		})
		if err != nil {
			crd, _ := crds.Get(ctx, "gadgets.example.com", metav1.GetOptions{})
			t.Fatal(err, lastErr, crd)
		}
		g, err := c.dynamic.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}).Namespace(ns).Get(ctx, "g", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if g.GetAPIVersion() != "example.com/v1" {
			t.Fatalf("read through v1: %v", g.Object)
		}
	})
	t.Run("deleting the definition deletes its objects", func(t *testing.T) {
		if err := crds.Delete(ctx, "widgets.example.com", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := crds.Get(ctx, "widgets.example.com", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Fatalf("definition still there: %v", err)
		}
		if _, err := widgets.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("widget after its definition: %v", err)
		}
	})
}

// TestSyncCustomResourcesServesStoredDefinitions is a restart's path: definitions already stored
// (here written before any controller ran, so neither holds names yet) are served by one
// SyncCustomResources before the server takes requests. Their names are checked against each
// other as they are accepted one by one, and discovery and OpenAPI hear of the served set once.
func TestSyncCustomResourcesServesStoredDefinitions(t *testing.T) {
	notices := 0
	c := startTestCluster(t, func(cfg *Config) {
		next := cfg.OnResourcesChanged
		cfg.OnResourcesChanged = func(all []*registry.Resource) {
			notices++
			next(all)
		}
	})
	ctx := context.Background()
	clash := strings.Replace(widgetCRD, "widgets", "doohickeys", -1)
	clash = strings.Replace(clash, "singular: widget, ", "", 1)
	clash = strings.Replace(clash, "shortNames: [wd], ", "", 1)
	for _, doc := range []string{widgetCRD, clash} {
		if _, err := c.dynamic.Resource(crdsGVR).Create(ctx, unstructuredFrom(t, doc), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if notices != 0 {
		t.Fatalf("%d notices before the sync", notices)
	}
	if err := c.api.SyncCustomResources(ctx); err != nil {
		t.Fatal(err)
	}
	if notices != 1 {
		t.Errorf("discovery and OpenAPI were told %d times, want once", notices)
	}
	// Both claim the kind Widget: the one accepted first (the LIST's order) serves, the other
	// holds no names.
	ns := c.namespace(t, "sync")
	served := map[string]bool{}
	for _, plural := range []string{"widgets", "doohickeys"} {
		gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: plural}
		_, err := c.dynamic.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		served[plural] = err == nil
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		crd, err := c.dynamic.Resource(crdsGVR).Get(ctx, plural+".example.com", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		conflict := false
		for _, cond := range conds {
			m := cond.(map[string]interface{})
			conflict = conflict || (m["type"] == "NamesAccepted" && m["status"] == "False" && m["message"] == `"Widget" is already in use`)
		}
		if conflict == served[plural] {
			t.Errorf("%s: served %v, its conditions %v", plural, served[plural], conds)
		}
	}
	if served["widgets"] == served["doohickeys"] {
		t.Errorf("served: %v, want one of the two", served)
	}
}
