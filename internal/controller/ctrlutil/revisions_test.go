package ctrlutil

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestRevisionDataRoundTrip(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "postgres:17"}}}}
	data, err := RevisionData(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	back, err := TemplateFromRevision(&appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: data}})
	if err != nil {
		t.Fatal(err)
	}
	if back.Spec.Containers[0].Image != "postgres:17" || back.Labels["app"] != "db" {
		t.Fatalf("template %+v", back)
	}
	if TemplateHash(tmpl, nil) != TemplateHash(back, nil) {
		t.Fatal("hash changed across a round trip")
	}
	if TemplateHash(tmpl, nil) == TemplateHash(tmpl, new(int32)) {
		t.Fatal("collision count must change the hash")
	}
}

// TestRevisionDataBytes: a revision's data is byte for byte the patch upstream's DaemonSet
// controller and its clients (daemon.Match in the conformance specs, built on apimachinery v0.33)
// compute from the same template, "creationTimestamp":null included.
func TestRevisionDataBytes(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "httpd"}}}}
	data, err := RevisionData(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"web"}},` +
		`"spec":{"containers":[{"image":"httpd","name":"app","resources":{}}]}}}}`
	if string(data) != want {
		t.Fatalf("revision data\n got %s\nwant %s", data, want)
	}
}
