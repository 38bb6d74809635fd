package statefulset

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

func TestClaimOwnerRefs(t *testing.T) {
	const retain, del = appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	setWith := func(whenDeleted, whenScaled appsv1.PersistentVolumeClaimRetentionPolicyType) *appsv1.StatefulSet {
		s := makeSet(2, "v1") // ordinals 0 and 1 are in range, 2 is scaled down
		s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: whenDeleted, WhenScaled: whenScaled}
		return s
	}
	inRange, scaledDown := setPod(makeSet(2, "v1"), 1, "v1", true), setPod(makeSet(2, "v1"), 2, "v1", true)
	setRef := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "uid-db", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	podRef := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "db-2", UID: "uid-db-2", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	setNotController := setRef
	setNotController.Controller = ptr.To(false)
	external := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "random-owner", UID: "uid-cm"}
	externalController := external
	externalController.Controller = ptr.To(true)
	staleSet := setRef
	staleSet.UID = "uid-old-db"

	tests := []struct {
		name       string
		set        *appsv1.StatefulSet
		pod        *corev1.Pod
		have, want []metav1.OwnerReference
	}{
		{"retain, retain: none", setWith(retain, retain), inRange, nil, nil},
		{"retain, retain: ours dropped", setWith(retain, retain), inRange, []metav1.OwnerReference{setRef}, nil},
		{"unset policy is retain", makeSet(2, "v1"), scaledDown, nil, nil},
		{"whenDeleted: the set as controller", setWith(del, retain), inRange, nil, []metav1.OwnerReference{setRef}},
		{"whenDeleted: a scaled-down pod's claim stays the set's", setWith(del, retain), scaledDown, nil, []metav1.OwnerReference{setRef}},
		{"whenDeleted: the set's reference made controller again", setWith(del, retain), inRange, []metav1.OwnerReference{setNotController}, []metav1.OwnerReference{setRef}},
		{"whenDeleted: other owners kept first", setWith(del, retain), inRange, []metav1.OwnerReference{external}, []metav1.OwnerReference{external, setRef}},
		{"whenScaled: in range, none", setWith(retain, del), inRange, nil, nil},
		{"whenScaled: scaled down, the pod as controller", setWith(retain, del), scaledDown, nil, []metav1.OwnerReference{podRef}},
		{"both: in range, the set", setWith(del, del), inRange, nil, []metav1.OwnerReference{setRef}},
		{"both: scaled down, the pod instead of the set", setWith(del, del), scaledDown, []metav1.OwnerReference{setRef}, []metav1.OwnerReference{podRef}},
		{"another controller: the set adds none", setWith(del, del), inRange, []metav1.OwnerReference{externalController}, []metav1.OwnerReference{externalController}},
		{"another controller: the pod is not made one", setWith(retain, del), scaledDown, []metav1.OwnerReference{externalController}, []metav1.OwnerReference{externalController}},
		{"another controller: ours dropped", setWith(del, retain), inRange, []metav1.OwnerReference{externalController, setRef}, []metav1.OwnerReference{externalController}},
		{"a previous set of the same name: left alone", setWith(del, del), inRange, []metav1.OwnerReference{staleSet}, []metav1.OwnerReference{staleSet}},
		{"a pod not created yet gets no reference", setWith(retain, del), newPodStub(makeSet(2, "v1"), 2), nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-db-x", Namespace: "default", OwnerReferences: slices.Clone(tt.have)}}
			got, update := ClaimOwnerRefs(claim, tt.set, tt.pod)
			if !slices.EqualFunc(got, tt.want, refEqual) {
				t.Errorf("refs %+v, want %+v", got, tt.want)
			}
			if wantUpdate := !slices.EqualFunc(tt.have, tt.want, refEqual); update != wantUpdate {
				t.Errorf("update %v, want %v", update, wantUpdate)
			}
		})
	}
}

func refEqual(a, b metav1.OwnerReference) bool {
	return a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Name == b.Name && a.UID == b.UID &&
		ptr.Deref(a.Controller, false) == ptr.Deref(b.Controller, false) && ptr.Deref(a.BlockOwnerDeletion, false) == ptr.Deref(b.BlockOwnerDeletion, false)
}

// TestScaleDownHandsClaimsToPods: with whenScaled Delete, the sync that deletes a scaled-away pod
// first makes the pod its claim's controller (so the garbage collector deletes the claim after the
// pod), and with whenDeleted Delete an existing claim becomes the set's.
func TestScaleDownHandsClaimsToPods(t *testing.T) {
	set := makeSet(1, "v1")
	set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
	pods := []*corev1.Pod{setPod(set, 0, "v1", true), setPod(set, 1, "v1", true)}
	f := newFixture(t, set, pods...)
	for i := range 2 {
		claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: ClaimName(set, "data", i), Namespace: "default"}}
		if _, err := f.env.Client.CoreV1().PersistentVolumeClaims("default").Create(t.Context(), claim, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ctrltest.Seed(t, f.env.Factory.Core().V1().PersistentVolumeClaims().Informer(), claim)
	}
	f.env.Writes()
	if err := f.ctrl.Sync(t.Context(), "default/db"); err != nil {
		t.Fatal(err)
	}
	got := ctrltest.Describe(f.env.Writes())
	updates := slices.Index(got, "update persistentvolumeclaims data-db-1")
	if updates < 0 || !slices.Contains(got, "update persistentvolumeclaims data-db-0") || slices.Index(got, "delete pods db-1") < updates {
		t.Fatalf("writes %q: want both claims' owners updated, then db-1 deleted", got)
	}
	for i, want := range []string{"StatefulSet/db", "Pod/db-1"} {
		claim, err := f.env.Client.CoreV1().PersistentVolumeClaims("default").Get(t.Context(), ClaimName(set, "data", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ref := metav1.GetControllerOf(claim); ref == nil || ref.Kind+"/"+ref.Name != want {
			t.Errorf("claim %s controller %+v, want %s", claim.Name, ref, want)
		}
	}
}
