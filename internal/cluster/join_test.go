package cluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestNodeTaints(t *testing.T) {
	cases := []struct {
		roles []Role
		want  []corev1.Taint
	}{
		{AllRoles, nil},
		{[]Role{RoleWorker}, nil},
		{[]Role{RoleEtcd, RoleControlPlane}, []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}},
		{[]Role{RoleControlPlane}, []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}},
		{[]Role{RoleEtcd}, []corev1.Taint{{Key: "node-role.kubernetes.io/etcd", Effect: corev1.TaintEffectNoExecute}}},
	}
	for _, c := range cases {
		got := nodeTaints(c.roles)
		if len(got) != len(c.want) || (len(got) == 1 && (got[0].Key != c.want[0].Key || got[0].Effect != c.want[0].Effect)) {
			t.Errorf("nodeTaints(%v) = %v, want %v", c.roles, got, c.want)
		}
	}
}
