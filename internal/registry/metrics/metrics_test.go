package metrics

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

func usage(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

func TestResources(t *testing.T) {
	res := Resources()
	if len(res) != 2 || res[0].Plural != "nodes" || res[0].Namespaced || res[1].Plural != "pods" || !res[1].Namespaced {
		t.Fatalf("resources = %+v", res)
	}
	window := metav1.Duration{Duration: 15 * time.Second}
	for _, tc := range []struct {
		name string
		i    int
		obj  runtime.Object
		want []interface{}
	}{
		{"node", 0, &metricsv1beta1.NodeMetrics{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Window: window, Usage: usage("1500m", "2Gi")},
			[]interface{}{"n1", "1500m", "2Gi", "15s"}},
		{"pod sums its containers", 1, &metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Window: window, Containers: []metricsv1beta1.ContainerMetrics{
			{Name: "a", Usage: usage("100m", "10Mi")}, {Name: "b", Usage: usage("150m", "6Mi")},
		}}, []interface{}{"web", "250m", "16Mi", "15s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row, err := res[tc.i].Printer.Row(tc.obj, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if len(row) != len(tc.want) {
				t.Fatalf("row = %v, want %v", row, tc.want)
			}
			for i := range row {
				if row[i] != tc.want[i] {
					t.Errorf("cell %d = %v, want %v", i, row[i], tc.want[i])
				}
			}
			if _, err := res[1-tc.i].Printer.Row(tc.obj, time.Time{}); err == nil {
				t.Error("the other resource's printer accepted the object")
			}
		})
	}
	for _, r := range res {
		if errs := r.Strategy.Validate(context.Background(), r.New()); len(errs) == 0 {
			t.Errorf("%s: a create passed validation", r.Plural)
		}
		if errs := r.Strategy.ValidateUpdate(context.Background(), r.New(), r.New()); len(errs) == 0 {
			t.Errorf("%s: an update passed validation", r.Plural)
		}
	}
}
