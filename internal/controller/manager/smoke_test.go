package manager

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

// TestAllControllersRunTogether runs the real registry (every controller but
// the two that need a dynamic client) on one fake clientset and checks that
// work flows through: a namespace gets its default ServiceAccount, and a
// Deployment becomes a ReplicaSet and then pods.
func TestAllControllersRunTogether(t *testing.T) {
	env := ctrltest.NewEnv()
	client := env.Client
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Client: client, Identity: "solo", LeaderElection: LeaderElection{Disabled: true}, Workers: 2})
	}()

	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", UID: "uid-web", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromString("25%"))}},
			RevisionHistoryLimit:    ptr.To[int32](10),
			ProgressDeadlineSeconds: ptr.To[int32](600),
		},
	}
	if _, err := client.AppsV1().Deployments("team").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	waitFor(t, "default service account", func() bool {
		_, err := client.CoreV1().ServiceAccounts("team").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	waitFor(t, "two pods of the deployment", func() bool {
		pods, err := client.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 2
	})
	rsList, err := client.AppsV1().ReplicaSets("team").List(ctx, metav1.ListOptions{})
	if err != nil || len(rsList.Items) != 1 {
		t.Fatalf("replicasets: %v %v", rsList, err)
	}
	pods, _ := client.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
	for _, p := range pods.Items {
		if ref := metav1.GetControllerOf(&p); ref == nil || ref.Name != rsList.Items[0].Name {
			t.Fatalf("pod %s owner %+v", p.Name, ref)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}
