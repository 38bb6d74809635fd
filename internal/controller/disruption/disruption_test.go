package disruption

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

func web() map[string]string { return map[string]string{"app": "web"} }

func makePDB(minAvailable, maxUnavailable *intstr.IntOrString) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Generation: 2},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: web()}, MinAvailable: minAvailable, MaxUnavailable: maxUnavailable},
	}
}

func TestStatus(t *testing.T) {
	now := ctrltest.Epoch()
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-d"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](4)}}
	rs := ctrltest.MakeReplicaSet("web-1", 4, web())
	rs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-d", Controller: ptr.To(true)}}
	pod := func(name string, ready bool) *corev1.Pod {
		b := ctrltest.MakePod(name).Labels(web()).OwnedBy(rs, "apps/v1", "ReplicaSet")
		if ready {
			b.Ready(now)
		}
		return b.Obj()
	}
	pods := []*corev1.Pod{pod("a", true), pod("b", true), pod("c", true), pod("d", false)}
	tests := []struct {
		name                                   string
		pdb                                    *policyv1.PodDisruptionBudget
		pods                                   []*corev1.Pod
		wantExpected, wantDesired, wantHealthy int32
		wantAllowed                            int32
		wantReason                             string
	}{
		{"minAvailable 2", makePDB(ptr.To(intstr.FromInt32(2)), nil), pods, 4, 2, 3, 1, policyv1.SufficientPodsReason},
		{"minAvailable 3: none allowed", makePDB(ptr.To(intstr.FromInt32(3)), nil), pods, 4, 3, 3, 0, policyv1.InsufficientPodsReason},
		{"maxUnavailable 1 against deployment scale", makePDB(nil, ptr.To(intstr.FromInt32(1))), pods, 4, 3, 3, 0, policyv1.InsufficientPodsReason},
		{"minAvailable 50%", makePDB(ptr.To(intstr.FromString("50%")), nil), pods, 4, 2, 3, 1, policyv1.SufficientPodsReason},
		{"percent without controller fails", makePDB(ptr.To(intstr.FromString("50%")), nil), []*corev1.Pod{ctrltest.MakePod("bare").Labels(web()).Ready(now).Obj()},
			0, 0, 0, 0, policyv1.SyncFailedReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{tt.pdb, deploy, rs}
			for _, p := range tt.pods {
				objs = append(objs, p)
			}
			env := ctrltest.NewEnv(objs...)
			c, err := New(env.Deps)
			if err != nil {
				t.Fatal(err)
			}
			ctrltest.Seed(t, env.Factory.Policy().V1().PodDisruptionBudgets().Informer(), tt.pdb)
			ctrltest.Seed(t, env.Factory.Apps().V1().Deployments().Informer(), deploy)
			ctrltest.Seed(t, env.Factory.Apps().V1().ReplicaSets().Informer(), rs)
			for _, p := range tt.pods {
				ctrltest.Seed(t, env.Factory.Core().V1().Pods().Informer(), p)
			}
			if err := c.Sync(context.Background(), "default/web"); err != nil {
				t.Fatal(err)
			}
			w := env.Writes()
			if len(w) != 1 {
				t.Fatalf("writes %q", ctrltest.Describe(w))
			}
			s := w[0].(clienttesting.UpdateAction).GetObject().(*policyv1.PodDisruptionBudget).Status
			if s.ExpectedPods != tt.wantExpected || s.DesiredHealthy != tt.wantDesired || s.CurrentHealthy != tt.wantHealthy ||
				s.DisruptionsAllowed != tt.wantAllowed || s.ObservedGeneration != 2 {
				t.Fatalf("status %+v", s)
			}
			if len(s.Conditions) != 1 || s.Conditions[0].Type != policyv1.DisruptionAllowedCondition || s.Conditions[0].Reason != tt.wantReason {
				t.Fatalf("conditions %+v", s.Conditions)
			}
		})
	}
}

func TestDisruptedPodsExpire(t *testing.T) {
	now := ctrltest.Epoch()
	pdb := makePDB(ptr.To(intstr.FromInt32(1)), nil)
	pdb.Status.DisruptedPods = map[string]metav1.Time{"a": metav1.NewTime(now.Add(-time.Minute)), "old": metav1.NewTime(now.Add(-3 * time.Minute))}
	pods := []*corev1.Pod{ctrltest.MakePod("a").Labels(web()).Ready(now).Obj(), ctrltest.MakePod("old").Labels(web()).Ready(now).Obj()}
	objs := []runtime.Object{pdb, pods[0], pods[1]}
	env := ctrltest.NewEnv(objs...)
	c, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Policy().V1().PodDisruptionBudgets().Informer(), pdb)
	ctrltest.Seed(t, env.Factory.Core().V1().Pods().Informer(), pods[0], pods[1])
	if err := c.Sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	s := env.Writes()[0].(clienttesting.UpdateAction).GetObject().(*policyv1.PodDisruptionBudget).Status
	if _, kept := s.DisruptedPods["a"]; !kept || len(s.DisruptedPods) != 1 || s.CurrentHealthy != 1 {
		t.Fatalf("status %+v", s)
	}
}
