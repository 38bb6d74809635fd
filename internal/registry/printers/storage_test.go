package printers

import (
	"reflect"
	"testing"
	"time"

	storagev1beta1 "k8s.io/api/storage/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestVolumeAttributesClassColumns: kubectl get vac shows Kubernetes' NAME, DRIVERNAME, AGE (no
// golden table: the class is served beyond the default v1.33 API the golden files come from).
func TestVolumeAttributesClassColumns(t *testing.T) {
	p := ForResource(schema.GroupResource{Group: "storage.k8s.io", Resource: "volumeattributesclasses"})
	if p == nil {
		t.Fatal("no printer for volumeattributesclasses")
	}
	var names []string
	for _, c := range p.Columns {
		names = append(names, c.Name)
	}
	if want := []string{"Name", "DriverName", "Age"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("columns %q, want %q", names, want)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	vac := &storagev1beta1.VolumeAttributesClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gold", CreationTimestamp: metav1.NewTime(now.Add(-3 * time.Hour))},
		DriverName: "hostpath.csi.k8s.io",
	}
	row, err := p.Row(vac, now)
	if err != nil {
		t.Fatal(err)
	}
	if want := []interface{}{"gold", "hostpath.csi.k8s.io", "3h"}; !reflect.DeepEqual(row, want) {
		t.Fatalf("row %#v, want %#v", row, want)
	}
}
