package defaulttolerationseconds

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/registry"
)

func TestDefaultTolerationSeconds(t *testing.T) {
	pods := &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Plural: "pods"}
	secs := func(n int64) *int64 { return &n }
	tol := func(key string, n int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs(n)}
	}
	tests := []struct {
		name        string
		plugin      Plugin
		subresource string
		have        []corev1.Toleration
		want        []corev1.Toleration
	}{
		{name: "both added, each with its own seconds", plugin: Plugin{NotReady: 5, Unreachable: 7},
			want: []corev1.Toleration{tol(corev1.TaintNodeNotReady, 5), tol(corev1.TaintNodeUnreachable, 7)}},
		{name: "zero seconds is immediate eviction, not the default", plugin: Plugin{NotReady: 0, Unreachable: 0},
			want: []corev1.Toleration{tol(corev1.TaintNodeNotReady, 0), tol(corev1.TaintNodeUnreachable, 0)}},
		{name: "the pod's own toleration stays", plugin: Plugin{NotReady: 300, Unreachable: 300},
			have: []corev1.Toleration{tol(corev1.TaintNodeUnreachable, 5)},
			want: []corev1.Toleration{tol(corev1.TaintNodeUnreachable, 5), tol(corev1.TaintNodeNotReady, 300)}},
		{name: "a toleration of every NoExecute taint covers both", plugin: Plugin{NotReady: 300, Unreachable: 300},
			have: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			want: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}},
		{name: "not on a subresource", plugin: Plugin{NotReady: 300, Unreachable: 300}, subresource: "status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Tolerations: tt.have}}
			a := &admission.Attributes{Verb: "create", Resource: pods, Subresource: tt.subresource, Namespace: "ns", Name: "p", Object: pod}
			if err := tt.plugin.Admit(context.Background(), a, nil); err != nil {
				t.Fatal(err)
			}
			if got, want := fmt.Sprint(tolerationStrings(pod.Spec.Tolerations)), fmt.Sprint(tolerationStrings(tt.want)); got != want {
				t.Errorf("tolerations = %s, want %s", got, want)
			}
		})
	}
}

func tolerationStrings(ts []corev1.Toleration) []string {
	var out []string
	for _, t := range ts {
		s := fmt.Sprintf("%s %s %s", t.Key, t.Operator, t.Effect)
		if t.TolerationSeconds != nil {
			s += fmt.Sprintf(" %ds", *t.TolerationSeconds)
		}
		out = append(out, s)
	}
	return out
}
