package apiserver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

func configMap(ns, name string, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Data:       map[string]string{"key": "value"},
	}
}

func deployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "app", Image: "nginx:1"},
					{Name: "sidecar", Image: "envoy:1"},
				}},
			},
		},
	}
}

// wantStatus fails unless err is an API error with the code and a message containing msg.
func wantStatus(t *testing.T, err error, code int32, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want %d %q, got no error", code, msg)
	}
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("want %d %q, got %T %v", code, msg, err, err)
	}
	if got := st.Status(); got.Code != code || !strings.Contains(got.Message, msg) {
		t.Fatalf("got %d %s %q, want %d containing %q", got.Code, got.Reason, got.Message, code, msg)
	}
}

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	return watch.Event{}
}

func TestAPIServer(t *testing.T) {
	c := startTestCluster(t)
	ctx := context.Background()

	t.Run("configmap CRUD", func(t *testing.T) {
		ns := c.namespace(t, "crud")
		cms := c.client.CoreV1().ConfigMaps(ns)
		created, err := cms.Create(ctx, configMap(ns, "one", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if created.UID == "" || created.ResourceVersion == "" || !created.CreationTimestamp.Time.Equal(testEpoch) {
			t.Errorf("created object lacks system fields: %+v", created.ObjectMeta)
		}
		got, err := cms.Get(ctx, "one", metav1.GetOptions{})
		if err != nil || got.Data["key"] != "value" || got.UID != created.UID {
			t.Fatalf("get: %v %+v", err, got)
		}
		got.Data["key"] = "changed"
		updated, err := cms.Update(ctx, got, metav1.UpdateOptions{})
		if err != nil || updated.Data["key"] != "changed" || updated.ResourceVersion == got.ResourceVersion {
			t.Fatalf("update: %v %+v", err, updated)
		}
		_, err = cms.Create(ctx, configMap(ns, "one", nil), metav1.CreateOptions{})
		wantStatus(t, err, 409, `configmaps "one" already exists`)
		if err := cms.Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err = cms.Get(ctx, "one", metav1.GetOptions{})
		wantStatus(t, err, 404, `configmaps "one" not found`)
		generated, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-"}}, metav1.CreateOptions{})
		if err != nil || !strings.HasPrefix(generated.Name, "gen-") || len(generated.Name) != len("gen-")+5 {
			t.Fatalf("generateName: %v %q", err, generated.GetName())
		}
		_, err = c.client.CoreV1().ConfigMaps("missing").Create(ctx, configMap("missing", "x", nil), metav1.CreateOptions{})
		wantStatus(t, err, 404, `namespaces "missing" not found`)
	})

	t.Run("stale update conflicts", func(t *testing.T) {
		ns := c.namespace(t, "conflicts")
		cms := c.client.CoreV1().ConfigMaps(ns)
		first, err := cms.Create(ctx, configMap(ns, "cm", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fresh := first.DeepCopy()
		fresh.Data["key"] = "first writer"
		if _, err := cms.Update(ctx, fresh, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		stale := first.DeepCopy()
		stale.Data["key"] = "second writer"
		_, err = cms.Update(ctx, stale, metav1.UpdateOptions{})
		wantStatus(t, err, 409, `Operation cannot be fulfilled on configmaps "cm": the object has been modified; please apply your changes to the latest version and try again`)
		if !apierrors.IsConflict(err) {
			t.Errorf("reason = %v, want Conflict", apierrors.ReasonForError(err))
		}
		err = cms.Delete(ctx, "cm", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &first.ResourceVersion}})
		wantStatus(t, err, 409, "Precondition failed: ResourceVersion in precondition")
	})

	t.Run("list pagination", func(t *testing.T) {
		ns := c.namespace(t, "pages")
		cms := c.client.CoreV1().ConfigMaps(ns)
		for i := range 7 {
			if _, err := cms.Create(ctx, configMap(ns, fmt.Sprintf("cm-%d", i), map[string]string{"paged": "yes"}), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		var names []string
		opts := metav1.ListOptions{Limit: 3, LabelSelector: "paged=yes"}
		firstRV := ""
		for page := 0; ; page++ {
			list, err := cms.List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) > 3 {
				t.Fatalf("page %d has %d items, limit 3", page, len(list.Items))
			}
			if page == 0 {
				firstRV = list.ResourceVersion
				// A write between pages must not show up: every page is read at the first page's revision.
				if _, err := cms.Create(ctx, configMap(ns, "cm-late", map[string]string{"paged": "yes"}), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			} else if list.ResourceVersion != firstRV {
				t.Errorf("page %d at resourceVersion %s, first page at %s", page, list.ResourceVersion, firstRV)
			}
			for _, item := range list.Items {
				names = append(names, item.Name)
			}
			if list.Continue == "" {
				break
			}
			opts.Continue = list.Continue
		}
		if want := "cm-0,cm-1,cm-2,cm-3,cm-4,cm-5,cm-6"; strings.Join(names, ",") != want {
			t.Errorf("paged names = %s, want %s", strings.Join(names, ","), want)
		}
		_, err := cms.List(ctx, metav1.ListOptions{Continue: "not-a-token"})
		wantStatus(t, err, 400, "")
	})

	t.Run("selectors", func(t *testing.T) {
		ns := c.namespace(t, "selectors")
		cms := c.client.CoreV1().ConfigMaps(ns)
		for name, tier := range map[string]string{"a": "front", "b": "back", "c": "front"} {
			if _, err := cms.Create(ctx, configMap(ns, name, map[string]string{"tier": tier}), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, tt := range []struct {
			opts metav1.ListOptions
			want string
		}{
			{metav1.ListOptions{LabelSelector: "tier=front"}, "a,c"},
			{metav1.ListOptions{LabelSelector: "tier!=front"}, "b"},
			{metav1.ListOptions{LabelSelector: "tier in (front,back),tier notin (front)"}, "b"},
			{metav1.ListOptions{FieldSelector: "metadata.name=c"}, "c"},
			{metav1.ListOptions{FieldSelector: "metadata.name!=c", LabelSelector: "tier=front"}, "a"},
			{metav1.ListOptions{FieldSelector: "metadata.namespace=" + ns, LabelSelector: "tier=back"}, "b"},
		} {
			list, err := cms.List(ctx, tt.opts)
			if err != nil {
				t.Fatalf("%+v: %v", tt.opts, err)
			}
			var names []string
			for _, item := range list.Items {
				names = append(names, item.Name)
			}
			if got := strings.Join(names, ","); got != tt.want {
				t.Errorf("list %+v = %s, want %s", tt.opts, got, tt.want)
			}
		}
		_, err := cms.List(ctx, metav1.ListOptions{FieldSelector: "data.key=value"})
		wantStatus(t, err, 400, "field label not supported: data.key")
		_, err = cms.List(ctx, metav1.ListOptions{LabelSelector: "tier in (front"})
		wantStatus(t, err, 400, "unable to parse requirement")
		pods, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n1,status.phase=Running"})
		if err != nil || len(pods.Items) != 0 {
			t.Errorf("pod field selectors: %v, %d items", err, len(pods.Items))
		}
	})

	t.Run("watch from a resourceVersion", func(t *testing.T) {
		ns := c.namespace(t, "watching")
		cms := c.client.CoreV1().ConfigMaps(ns)
		before, err := cms.Create(ctx, configMap(ns, "before", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: before.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		after, err := cms.Create(ctx, configMap(ns, "after", map[string]string{"x": "y"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		after.Data["key"] = "v2"
		if _, err := cms.Update(ctx, after, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cms.Delete(ctx, "after", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, want := range []struct {
			typ  watch.EventType
			data string
		}{{watch.Added, "value"}, {watch.Modified, "v2"}, {watch.Deleted, "v2"}} {
			ev := nextEvent(t, w)
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if ev.Type != want.typ || !ok || cm.Name != "after" || cm.Data["key"] != want.data {
				t.Fatalf("event %s %T %v, want %s of after with %s", ev.Type, ev.Object, ev.Object, want.typ, want.data)
			}
		}

		// A label-selected watch from "0" starts with the matching objects that exist.
		if _, err := cms.Create(ctx, configMap(ns, "labelled", map[string]string{"watch": "me"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		sel, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "0", LabelSelector: "watch=me"})
		if err != nil {
			t.Fatal(err)
		}
		defer sel.Stop()
		if ev := nextEvent(t, sel); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "labelled" {
			t.Fatalf("first event %s %v, want ADDED labelled", ev.Type, ev.Object)
		}
	})

	t.Run("patches", func(t *testing.T) {
		ns := c.namespace(t, "patches")
		deps := c.client.AppsV1().Deployments(ns)
		if _, err := deps.Create(ctx, deployment(ns, "web", 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		out, err := deps.Patch(ctx, "web", types.JSONPatchType, []byte(`[{"op":"add","path":"/metadata/labels","value":{"patched":"json"}}]`), metav1.PatchOptions{})
		if err != nil || out.Labels["patched"] != "json" {
			t.Fatalf("json patch: %v %v", err, out.GetLabels())
		}
		out, err = deps.Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"labels":{"patched":"merge"}}}`), metav1.PatchOptions{})
		if err != nil || out.Labels["patched"] != "merge" {
			t.Fatalf("merge patch: %v %v", err, out.GetLabels())
		}
		generation := out.Generation
		out, err = deps.Patch(ctx, "web", types.StrategicMergePatchType, []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"envoy:2"}]}}}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cs := out.Spec.Template.Spec.Containers; len(cs) != 2 || cs[0].Image != "nginx:1" || cs[1].Image != "envoy:2" {
			t.Errorf("strategic patch containers = %+v", cs)
		}
		if out.Generation != generation+1 {
			t.Errorf("generation %d after a spec change, want %d", out.Generation, generation+1)
		}
		_, err = deps.Patch(ctx, "web", types.JSONPatchType, []byte(`[{"op":"test","path":"/spec/replicas","value":5}]`), metav1.PatchOptions{})
		wantStatus(t, err, 422, "test failed")
		_, err = deps.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":-1}}`), metav1.PatchOptions{})
		wantStatus(t, err, 422, "spec.replicas")
		_, err = deps.Patch(ctx, "missing", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
		wantStatus(t, err, 404, `deployments.apps "missing" not found`)

		// Server-side apply: create, then a second manager's conflicting change, then force.
		apply := func(manager, image string, force bool) (*appsv1.Deployment, error) {
			body := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"applied"},"spec":{"selector":{"matchLabels":{"app":"applied"}},"template":{"metadata":{"labels":{"app":"applied"}},"spec":{"containers":[{"name":"app","image":%q}]}}}}`, image)
			return deps.Patch(ctx, "applied", types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: manager, Force: &force})
		}
		created, err := apply("alice", "nginx:1", false)
		if err != nil {
			t.Fatal(err)
		}
		if len(created.ManagedFields) == 0 || created.ManagedFields[0].Manager != "alice" || created.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
			t.Errorf("managedFields = %+v", created.ManagedFields)
		}
		_, err = apply("bob", "nginx:2", false)
		wantStatus(t, err, 409, `conflict with "alice"`)
		forced, err := apply("bob", "nginx:2", true)
		if err != nil || forced.Spec.Template.Spec.Containers[0].Image != "nginx:2" {
			t.Fatalf("forced apply: %v", err)
		}
		_, err = deps.Patch(ctx, "applied", types.ApplyPatchType, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"applied"}}`), metav1.PatchOptions{})
		wantStatus(t, err, 400, "fieldManager is required")
	})

	t.Run("dry run", func(t *testing.T) {
		ns := c.namespace(t, "dryrun")
		cms := c.client.CoreV1().ConfigMaps(ns)
		out, err := cms.Create(ctx, configMap(ns, "ghost", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil || out.Name != "ghost" || out.UID == "" {
			t.Fatalf("dry-run create: %v %+v", err, out)
		}
		_, err = cms.Get(ctx, "ghost", metav1.GetOptions{})
		wantStatus(t, err, 404, "not found")
		real, err := cms.Create(ctx, configMap(ns, "real", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		real.Data["key"] = "dry"
		if _, err := cms.Update(ctx, real, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatal(err)
		}
		if _, err := cms.Patch(ctx, "real", types.MergePatchType, []byte(`{"data":{"key":"dry"}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatal(err)
		}
		if err := cms.Delete(ctx, "real", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatal(err)
		}
		stored, err := cms.Get(ctx, "real", metav1.GetOptions{})
		if err != nil || stored.Data["key"] != "value" || stored.ResourceVersion != real.ResourceVersion {
			t.Fatalf("dry-run writes changed the object: %v %+v", err, stored)
		}
		_, err = cms.Create(ctx, configMap(ns, "real", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		wantStatus(t, err, 409, "already exists")
	})

	t.Run("finalizers", func(t *testing.T) {
		ns := c.namespace(t, "finalizers")
		cms := c.client.CoreV1().ConfigMaps(ns)
		cm := configMap(ns, "held", nil)
		cm.Finalizers = []string{"example.com/hold"}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cms.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		held, err := cms.Get(ctx, "held", metav1.GetOptions{})
		if err != nil || held.DeletionTimestamp == nil {
			t.Fatalf("object with a finalizer: %v, deletionTimestamp %v", err, held.GetDeletionTimestamp())
		}
		held.Finalizers = nil
		if _, err := cms.Update(ctx, held, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err = cms.Get(ctx, "held", metav1.GetOptions{})
		wantStatus(t, err, 404, "not found")

		// Foreground deletion adds the foregroundDeletion finalizer and keeps the object.
		if _, err := cms.Create(ctx, configMap(ns, "fg", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		fg := metav1.DeletePropagationForeground
		if err := cms.Delete(ctx, "fg", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
			t.Fatal(err)
		}
		got, err := cms.Get(ctx, "fg", metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp == nil || len(got.Finalizers) != 1 || got.Finalizers[0] != metav1.FinalizerDeleteDependents {
			t.Fatalf("foreground deletion: %v %+v", err, got.ObjectMeta)
		}
	})

	t.Run("graceful pod deletion and binding", func(t *testing.T) {
		ns := c.namespace(t, "graceful")
		pods := c.client.CoreV1().Pods(ns)
		if _, err := pods.Create(ctx, makePod("web").ns(ns).obj(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bind := func(node string) error {
			return pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{})
		}
		if err := bind("node-1"); err != nil {
			t.Fatal(err)
		}
		pod, err := pods.Get(ctx, "web", metav1.GetOptions{})
		if err != nil || pod.Spec.NodeName != "node-1" {
			t.Fatalf("bound pod: %v, nodeName %q", err, pod.Spec.NodeName)
		}
		if len(pod.Status.Conditions) == 0 || pod.Status.Conditions[0].Type != corev1.PodScheduled || pod.Status.Conditions[0].Status != corev1.ConditionTrue {
			t.Errorf("conditions after binding = %+v", pod.Status.Conditions)
		}
		wantStatus(t, bind("node-2"), 409, `pod web is already assigned to node "node-1"`)
		err = pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{})
		wantStatus(t, err, 422, "target.name: Required value")

		if err := pods.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		terminating, err := pods.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("scheduled pod vanished on a graceful delete: %v", err)
		}
		if terminating.DeletionTimestamp == nil || !terminating.DeletionTimestamp.Time.Equal(testEpoch.Add(30*time.Second)) ||
			terminating.DeletionGracePeriodSeconds == nil || *terminating.DeletionGracePeriodSeconds != 30 {
			t.Errorf("graceful delete: deletionTimestamp %v, grace %v; want epoch+30s, 30", terminating.DeletionTimestamp, terminating.DeletionGracePeriodSeconds)
		}
		wantStatus(t, bind("node-3"), 409, "is being deleted")
		zero := int64(0)
		if err := pods.Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		_, err = pods.Get(ctx, "web", metav1.GetOptions{})
		wantStatus(t, err, 404, `pods "web" not found`)

		// An unscheduled pod has nothing to wait for: it goes at once.
		if _, err := pods.Create(ctx, makePod("pending").ns(ns).obj(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := pods.Delete(ctx, "pending", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err = pods.Get(ctx, "pending", metav1.GetOptions{})
		wantStatus(t, err, 404, "not found")
	})

	t.Run("deletecollection keeps each pod's grace period", func(t *testing.T) {
		ns := c.namespace(t, "collection")
		pods := c.client.CoreV1().Pods(ns)
		// "a" is unscheduled (deleted at once), "b" is running on a node (must get its grace period).
		for _, name := range []string{"a", "b"} {
			if _, err := pods.Create(ctx, makePod(name).ns(ns).label("set", "x").obj(), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Target: corev1.ObjectReference{Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "set=x"}); err != nil {
			t.Fatal(err)
		}
		_, err := pods.Get(ctx, "a", metav1.GetOptions{})
		wantStatus(t, err, 404, "not found")
		b, err := pods.Get(ctx, "b", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("scheduled pod b was removed without its grace period: %v", err)
		}
		if b.DeletionGracePeriodSeconds == nil || *b.DeletionGracePeriodSeconds != 30 {
			t.Errorf("pod b grace = %v, want 30", b.DeletionGracePeriodSeconds)
		}
	})

	t.Run("eviction respects a disruption budget", func(t *testing.T) {
		ns := c.namespace(t, "eviction")
		pods := c.client.CoreV1().Pods(ns)
		if _, err := pods.Create(ctx, makePod("guarded").ns(ns).label("app", "db").obj(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "guarded"}, Target: corev1.ObjectReference{Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod, err := pods.Get(ctx, "guarded", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Running and Ready: an unready pod would leave under the default IfHealthyBudget policy
		// without spending the budget, as upstream lets it.
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		one := intstr.FromInt32(1)
		pdb, err := c.client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "db"},
			Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
		if pdb, err = c.client.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		evict := func() error {
			return pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: ns}})
		}
		err = evict()
		wantStatus(t, err, 429, "Cannot evict pod as it would violate the pod's disruption budget.")
		if !apierrors.IsTooManyRequests(err) {
			t.Errorf("reason = %s, want TooManyRequests", apierrors.ReasonForError(err))
		}
		pdb.Status.DisruptionsAllowed = 1
		if _, err := c.client.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		// A dry-run eviction checks the budget but neither spends it nor touches the pod.
		if err := pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: ns}, DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}}); err != nil {
			t.Fatal(err)
		}
		if budget, err := c.client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "db", metav1.GetOptions{}); err != nil || budget.Status.DisruptionsAllowed != 1 || len(budget.Status.DisruptedPods) != 0 {
			t.Fatalf("budget after a dry-run eviction: %v %+v", err, budget.Status)
		}
		if still, err := pods.Get(ctx, "guarded", metav1.GetOptions{}); err != nil || still.DeletionTimestamp != nil || len(still.Status.Conditions) != 1 {
			t.Fatalf("pod after a dry-run eviction: %v %+v", err, still.Status.Conditions)
		}
		// An eviction with a resourceVersion precondition still succeeds: the DisruptionTarget
		// condition it writes first moves the precondition along.
		current, err := pods.Get(ctx, "guarded", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: ns},
			DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &current.ResourceVersion}}}); err != nil {
			t.Fatal(err)
		}
		evicted, err := pods.Get(ctx, "guarded", metav1.GetOptions{})
		if err != nil || evicted.DeletionTimestamp == nil {
			t.Fatalf("evicted pod: %v, deletionTimestamp %v", err, evicted.GetDeletionTimestamp())
		}
		var target *corev1.PodCondition
		for i := range evicted.Status.Conditions {
			if evicted.Status.Conditions[i].Type == corev1.DisruptionTarget {
				target = &evicted.Status.Conditions[i]
			}
		}
		if target == nil || target.Status != corev1.ConditionTrue || target.Reason != "EvictionByEvictionAPI" || target.Message != "Eviction API: evicting" {
			t.Fatalf("evicted pod's DisruptionTarget condition = %+v", target)
		}
		after, err := c.client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil || after.Status.DisruptionsAllowed != 0 || after.Status.DisruptedPods["guarded"].Time.IsZero() {
			t.Errorf("budget after eviction: %v %+v", err, after.Status)
		}
	})

	t.Run("namespace deletion and finalize", func(t *testing.T) {
		ns := c.namespace(t, "doomed")
		created, err := c.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil || len(created.Spec.Finalizers) != 1 || created.Spec.Finalizers[0] != corev1.FinalizerKubernetes || created.Status.Phase != corev1.NamespaceActive {
			t.Fatalf("new namespace: %v %+v", err, created)
		}
		if _, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, "content", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := c.client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		terminating, err := c.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil || terminating.Status.Phase != corev1.NamespaceTerminating || terminating.DeletionTimestamp == nil {
			t.Fatalf("deleted namespace: %v phase %q deletionTimestamp %v", err, terminating.Status.Phase, terminating.GetDeletionTimestamp())
		}
		_, err = c.client.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, "late", nil), metav1.CreateOptions{})
		wantStatus(t, err, 403, "unable to create new content in namespace doomed because it is being terminated")
		err = c.client.CoreV1().Namespaces().Delete(ctx, "kube-system", metav1.DeleteOptions{})
		wantStatus(t, err, 403, "this namespace may not be deleted")

		terminating.Spec.Finalizers = nil
		if _, err := c.client.CoreV1().Namespaces().Finalize(ctx, terminating, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err = c.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		wantStatus(t, err, 404, `namespaces "doomed" not found`)
	})

	t.Run("scale subresource", func(t *testing.T) {
		ns := c.namespace(t, "scaling")
		deps := c.client.AppsV1().Deployments(ns)
		if _, err := deps.Create(ctx, deployment(ns, "web", 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		scale, err := deps.GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil || scale.Spec.Replicas != 1 || scale.Status.Selector != "app=web" {
			t.Fatalf("get scale: %v %+v", err, scale)
		}
		scale.Spec.Replicas = 3
		out, err := deps.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
		if err != nil || out.Spec.Replicas != 3 {
			t.Fatalf("update scale: %v %+v", err, out)
		}
		dep, err := deps.Get(ctx, "web", metav1.GetOptions{})
		if err != nil || *dep.Spec.Replicas != 3 {
			t.Fatalf("deployment after scale: %v %v", err, dep.Spec.Replicas)
		}
		_, err = deps.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
		wantStatus(t, err, 409, "the object has been modified")
		_, err = deps.UpdateScale(ctx, "web", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: autoscalingv1.ScaleSpec{Replicas: -2}}, metav1.UpdateOptions{})
		wantStatus(t, err, 422, "spec.replicas")
		patched := &autoscalingv1.Scale{}
		err = c.client.AppsV1().RESTClient().Patch(types.MergePatchType).Namespace(ns).Resource("deployments").Name("web").SubResource("scale").
			Body([]byte(`{"spec":{"replicas":5}}`)).Do(ctx).Into(patched)
		if err != nil || patched.Spec.Replicas != 5 {
			t.Fatalf("patch scale: %v %+v", err, patched)
		}
		if dep, err := deps.Get(ctx, "web", metav1.GetOptions{}); err != nil || *dep.Spec.Replicas != 5 {
			t.Fatalf("deployment after scale patch: %v", err)
		}
	})

	t.Run("service allocation", func(t *testing.T) {
		ns := c.namespace(t, "services")
		services := c.client.CoreV1().Services(ns)
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
		}
		created, err := services.Create(ctx, svc, metav1.CreateOptions{})
		if err != nil || !strings.HasPrefix(created.Spec.ClusterIP, "10.43.") || created.Spec.Ports[0].NodePort < 30000 {
			t.Fatalf("create: %v %+v", err, created)
		}
		_, err = services.Create(ctx, svc, metav1.CreateOptions{})
		wantStatus(t, err, 409, `services "web" already exists`)
		// A PUT of the manifest without the allocated values keeps them.
		replaced := svc.DeepCopy()
		replaced.ResourceVersion = created.ResourceVersion
		replaced.Labels = map[string]string{"v": "2"}
		updated, err := services.Update(ctx, replaced, metav1.UpdateOptions{})
		if err != nil || updated.Spec.ClusterIP != created.Spec.ClusterIP || updated.Spec.Ports[0].NodePort != created.Spec.Ports[0].NodePort {
			t.Fatalf("update without allocated values: %v %+v", err, updated)
		}
		// The IP and port are taken while web holds them and free once it is deleted.
		taken := svc.DeepCopy()
		taken.Name = "taken"
		taken.Spec.ClusterIP = created.Spec.ClusterIP
		_, err = services.Create(ctx, taken, metav1.CreateOptions{})
		wantStatus(t, err, 422, "provided IP is already allocated")
		if err := services.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		taken.Spec.Ports[0].NodePort = created.Spec.Ports[0].NodePort
		if got, err := services.Create(ctx, taken, metav1.CreateOptions{}); err != nil || got.Spec.ClusterIP != created.Spec.ClusterIP {
			t.Fatalf("reuse after delete: %v %+v", err, got)
		}
	})

	t.Run("protobuf", func(t *testing.T) {
		ns := c.namespace(t, "protobuf")
		cfg := rest.CopyConfig(c.admin)
		cfg.ContentType = runtime.ContentTypeProtobuf
		cfg.AcceptContentTypes = runtime.ContentTypeProtobuf
		client := kubernetes.NewForConfigOrDie(cfg)
		pods := client.CoreV1().Pods(ns)
		created, err := pods.Create(ctx, makePod("proto").ns(ns).label("enc", "pb").obj(), metav1.CreateOptions{})
		if err != nil || created.Spec.Containers[0].Image != "busybox" {
			t.Fatalf("protobuf create: %v", err)
		}
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "enc=pb"})
		if err != nil || len(list.Items) != 1 {
			t.Fatalf("protobuf list: %v", err)
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if _, err := pods.Patch(ctx, "proto", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"more":"x"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if ev := nextEvent(t, w); ev.Type != watch.Modified || ev.Object.(*corev1.Pod).Labels["more"] != "x" {
			t.Fatalf("protobuf watch event %s %v", ev.Type, ev.Object)
		}
		_, err = pods.Get(ctx, "missing", metav1.GetOptions{})
		wantStatus(t, err, 404, `pods "missing" not found`)
	})

	t.Run("table output", func(t *testing.T) {
		ns := c.namespace(t, "tables")
		for _, name := range []string{"t1", "t2"} {
			if _, err := c.client.CoreV1().Pods(ns).Create(ctx, makePod(name).ns(ns).obj(), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		table := &metav1.Table{}
		err := c.client.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json").
			Do(ctx).Into(table)
		if err != nil {
			t.Fatal(err)
		}
		var columns []string
		for _, col := range table.ColumnDefinitions {
			columns = append(columns, col.Name)
		}
		if got := strings.Join(columns, ","); !strings.HasPrefix(got, "Name,Ready,Status,Restarts,Age") {
			t.Errorf("pod columns = %s", got)
		}
		if len(table.Rows) != 2 || table.Rows[0].Cells[0] != "t1" || table.Rows[1].Cells[0] != "t2" {
			t.Fatalf("rows = %+v", table.Rows)
		}
		if !strings.Contains(string(table.Rows[0].Object.Raw), `"kind":"PartialObjectMetadata"`) {
			t.Errorf("row object = %s, want PartialObjectMetadata", table.Rows[0].Object.Raw)
		}
		one := &metav1.Table{}
		if err := c.client.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").Name("t1").
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(one); err != nil || len(one.Rows) != 1 {
			t.Fatalf("table of one object: %v %+v", err, one)
		}
	})

	t.Run("partial object metadata", func(t *testing.T) {
		ns := c.namespace(t, "metadata")
		if _, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, "m1", map[string]string{"k": "v"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		mc, err := metadata.NewForConfig(c.admin)
		if err != nil {
			t.Fatal(err)
		}
		gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
		list, err := mc.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 || list.Items[0].Name != "m1" || list.Items[0].Labels["k"] != "v" || list.ResourceVersion == "" {
			t.Fatalf("metadata list = %+v", list)
		}
		one, err := mc.Resource(gvr).Namespace(ns).Get(ctx, "m1", metav1.GetOptions{})
		if err != nil || one.Name != "m1" || one.UID == "" {
			t.Fatalf("metadata get: %v %+v", err, one)
		}
		// In JSON the kinds are visible: the data itself is left out.
		raw, err := c.client.CoreV1().RESTClient().Get().Namespace(ns).Resource("configmaps").
			SetHeader("Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if body := string(raw); !strings.Contains(body, `"kind":"PartialObjectMetadataList"`) || !strings.Contains(body, `"apiVersion":"meta.k8s.io/v1"`) || strings.Contains(body, `"data"`) {
			t.Errorf("PartialObjectMetadataList = %s", body)
		}
	})

	t.Run("dynamic client", func(t *testing.T) {
		ns := c.namespace(t, "dynamic")
		gvr := appsv1.SchemeGroupVersion.WithResource("deployments")
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(deployment(ns, "dyn", 2))
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: obj}
		u.SetAPIVersion("apps/v1")
		u.SetKind("Deployment")
		created, err := c.dynamic.Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		replicas, _, _ := unstructured.NestedInt64(created.Object, "spec", "replicas")
		if replicas != 2 || created.GetGeneration() != 1 {
			t.Errorf("created replicas %d generation %d", replicas, created.GetGeneration())
		}
		list, err := c.dynamic.Resource(gvr).List(ctx, metav1.ListOptions{FieldSelector: "metadata.namespace=" + ns})
		if err != nil || len(list.Items) != 1 {
			t.Fatalf("dynamic list across namespaces: %v", err)
		}
		bad := u.DeepCopy()
		bad.SetName("bad")
		_ = unstructured.SetNestedField(bad.Object, "bogus", "spec", "unknownField")
		_, err = c.dynamic.Resource(gvr).Namespace(ns).Create(ctx, bad, metav1.CreateOptions{FieldValidation: "Strict"})
		wantStatus(t, err, 400, `strict decoding error: unknown field "spec.unknownField"`)
		// A named object of a namespaced resource asked for without its namespace, and a
		// namespace on a cluster-scoped one, have no route, as in Kubernetes: NotFound (the CSI
		// snapshot specs check a deletion this way).
		_, err = c.dynamic.Resource(gvr).Get(ctx, "dyn", metav1.GetOptions{})
		wantStatus(t, err, 404, "the server could not find the requested resource")
		if !apierrors.IsNotFound(err) {
			t.Fatalf("no-namespace get of a namespaced object: %v, want NotFound", err)
		}
		_, err = c.dynamic.Resource(corev1.SchemeGroupVersion.WithResource("nodes")).Namespace(ns).Get(ctx, "n1", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("namespaced get of a node: %v, want NotFound", err)
		}
		if err := c.dynamic.Resource(gvr).Namespace(ns).Delete(ctx, "dyn", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("anonymous requests", func(t *testing.T) {
		anon := kubernetes.NewForConfigOrDie(c.anonymous)
		_, err := anon.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		wantStatus(t, err, 401, "Unauthorized")
		if !apierrors.IsUnauthorized(err) {
			t.Errorf("reason = %s", apierrors.ReasonForError(err))
		}
		// Without AnonymousAuth (--anonymous-auth=false) nothing is open, /version included.
		_, err = anon.Discovery().ServerVersion()
		if !apierrors.IsUnauthorized(err) {
			t.Errorf("anonymous /version without AnonymousAuth: %v, want 401", err)
		}
	})

	t.Run("health and metrics", func(t *testing.T) {
		httpClient, err := rest.HTTPClientFor(c.anonymous)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/readyz", "/healthz", "/livez", "/metrics"} {
			if code, _ := get(t, httpClient, c.server.URL+path); code != http.StatusUnauthorized {
				t.Errorf("anonymous %s without AnonymousAuth = %d, want 401", path, code)
			}
		}
		adminClient, err := rest.HTTPClientFor(c.admin)
		if err != nil {
			t.Fatal(err)
		}
		// The health checks' indicators (/metrics/slis) move with the health endpoints' runs.
		for _, path := range []string{"/readyz", "/livez"} {
			if code, _ := get(t, adminClient, c.server.URL+path); code != http.StatusOK {
				t.Fatalf("%s = %d", path, code)
			}
		}
		code, body := get(t, adminClient, c.server.URL+"/metrics/slis")
		if code != http.StatusOK {
			t.Fatalf("/metrics/slis = %d", code)
		}
		for _, want := range []string{
			`kubernetes_healthcheck{name="etcd",type="readyz"} 1`,
			`kubernetes_healthchecks_total{name="ping",status="success",type="livez"}`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics/slis lacks %s:\n%s", want, body)
			}
		}
		code, body = get(t, adminClient, c.server.URL+"/metrics")
		if code != http.StatusOK {
			t.Fatalf("/metrics = %d", code)
		}
		for _, want := range []string{
			`apiserver_request_total{code="201",group="",resource="configmaps",subresource="",verb="POST",version="v1"}`,
			`apiserver_request_total{code="200",group="",resource="configmaps",subresource="",verb="PUT",version="v1"}`,
			`apiserver_request_total{code="201",group="apps",resource="deployments",subresource="",verb="APPLY",version="v1"}`,
			`apiserver_request_total{code="200",group="apps",resource="deployments",subresource="scale",verb="PATCH",version="v1"}`,
			`apiserver_request_total{code="200",group="",resource="pods",subresource="",verb="DELETECOLLECTION",version="v1"}`,
			`apiserver_request_total{code="401",group="",resource="namespaces",subresource="",verb="LIST",version="v1"}`,
			`apiserver_request_duration_seconds_bucket{`,
			`apiserver_request_sli_duration_seconds_bucket{`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		if code, body := get(t, adminClient, c.server.URL+"/api/v1/nosuchthings"); code != http.StatusNotFound || !strings.Contains(body, `"reason":"NotFound"`) {
			t.Errorf("unknown resource = %d %s", code, body)
		}
	})
}

func get(t *testing.T, client *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
