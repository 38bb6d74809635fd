package core

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/registry"
)

func TestPodBinding(t *testing.T) {
	unbound := makePod("web").with(func(p *corev1.Pod) { p.UID = "uid-web" }).obj()
	bound := makePod("web").node("n1").obj()
	deleting := makePod("web").with(func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: actionEpoch} }).obj()
	binding := func(mods ...func(*corev1.Binding)) *corev1.Binding {
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n2"}}
		for _, m := range mods {
			m(b)
		}
		return b
	}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		binding *corev1.Binding
		dryRun  bool
		// code 0 is success: the pod is bound to n2.
		code       int32
		message    string
		causes     []string
		wantWrites []string
	}{
		{name: "binds an unassigned pod", pod: unbound, binding: binding(), wantWrites: []string{"update pods web"}},
		{name: "a binding without a name binds the pod of the URL", pod: unbound, binding: binding(func(b *corev1.Binding) { b.Name = "" }), wantWrites: []string{"update pods web"}},
		{name: "an empty target kind means a node", pod: unbound, binding: binding(func(b *corev1.Binding) { b.Target.Kind = "" }), wantWrites: []string{"update pods web"}},
		{name: "the pod's uid as precondition", pod: unbound, binding: binding(func(b *corev1.Binding) { b.UID = "uid-web" }), wantWrites: []string{"update pods web"}},
		{name: "dry run writes nothing", pod: unbound, binding: binding(), dryRun: true, wantWrites: []string{"update pods web (dry run)"}},
		{name: "already bound", pod: bound, binding: binding(), code: 409,
			message: `Operation cannot be fulfilled on pods/binding "web": pod web is already assigned to node "n1"`, wantWrites: []string{"update pods web"}},
		{name: "being deleted", pod: deleting, binding: binding(), code: 409,
			message: "pod web is being deleted, cannot be assigned to a host", wantWrites: []string{"update pods web"}},
		{name: "another pod's uid is the store's conflict", pod: unbound, binding: binding(func(b *corev1.Binding) { b.UID = "uid-other" }), code: 409,
			message: "Precondition failed: UID in precondition: uid-other", wantWrites: []string{"update pods web"}},
		{name: "no such pod", binding: binding(), code: 404, message: `pods "web" not found`, wantWrites: []string{"update pods web"}},
		{name: "no target name", pod: unbound, binding: binding(func(b *corev1.Binding) { b.Target.Name = "" }), code: 422,
			message: `Binding "web" is invalid`, causes: []string{"target.name:FieldValueRequired"}},
		{name: "a target that is not a node", pod: unbound, binding: binding(func(b *corev1.Binding) { b.Target.Kind = "Pod"; b.Target.Name = "" }), code: 422,
			causes: []string{"target.kind:FieldValueNotSupported", "target.name:FieldValueRequired"}},
		{name: "another pod's name", pod: unbound, binding: binding(func(b *corev1.Binding) { b.Name = "other" }), code: 400,
			message: "the name of the object (other) does not match the name on the URL (web)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stores *fixtureStores
			if tt.pod != nil {
				stores = newFixtureStores(tt.pod)
			} else {
				stores = newFixtureStores()
			}
			out, err := runAction(t, "pods", "binding", fixtureEnv(stores),
				registry.ActionRequest{Namespace: "default", Name: "web", Body: tt.binding, DryRun: tt.dryRun})
			if !slices.Equal(stores.writes(), tt.wantWrites) {
				t.Errorf("writes %q, want %q", stores.writes(), tt.wantWrites)
			}
			if tt.code != 0 {
				wantStatus(t, err, tt.code, tt.message, tt.causes...)
				if tt.pod != nil {
					if pod := stores.object(podsResource, "default", "web").(*corev1.Pod); pod.Spec.NodeName != tt.pod.Spec.NodeName {
						t.Errorf("a refused binding changed the pod's node to %q", pod.Spec.NodeName)
					}
				}
				return
			}
			wantCreated(t, out, err)
			pod := stores.object(podsResource, "default", "web").(*corev1.Pod)
			if tt.dryRun {
				if pod.Spec.NodeName != "" {
					t.Fatalf("a dry run bound the pod to %q", pod.Spec.NodeName)
				}
				return
			}
			if pod.Spec.NodeName != "n2" {
				t.Fatalf("bound to %q, want n2", pod.Spec.NodeName)
			}
			if len(pod.Status.Conditions) != 1 || pod.Status.Conditions[0].Type != corev1.PodScheduled ||
				pod.Status.Conditions[0].Status != corev1.ConditionTrue || !pod.Status.Conditions[0].LastTransitionTime.Time.Equal(actionEpoch) {
				t.Fatalf("conditions after binding: %+v", pod.Status.Conditions)
			}
		})
	}
}

func TestAssignPodAnnotationsAndCondition(t *testing.T) {
	pod := makePod("web").with(func(p *corev1.Pod) {
		p.Annotations = map[string]string{"kept": "yes", "over": "old"}
		// A PodScheduled=True condition keeps its transition time.
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Time{Time: actionEpoch.Add(-time.Hour)}}}
	}).obj()
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"over": "new", "added": "x"}}, Target: corev1.ObjectReference{Name: "n1"}}
	if err := assignPod(pod, b, actionEpoch); err != nil {
		t.Fatal(err)
	}
	if pod.Annotations["kept"] != "yes" || pod.Annotations["over"] != "new" || pod.Annotations["added"] != "x" {
		t.Errorf("annotations %v", pod.Annotations)
	}
	if c := pod.Status.Conditions; len(c) != 1 || !c[0].LastTransitionTime.Time.Equal(actionEpoch.Add(-time.Hour)) {
		t.Errorf("conditions %+v", c)
	}
	if err := assignPod(pod, b, actionEpoch); err == nil {
		t.Error("a bound pod was bound again")
	}
}
