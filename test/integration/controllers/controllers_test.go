package controllers

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// TestControllerSemantics runs every scenario against one skiff with four simulated nodes.
func TestControllerSemantics(t *testing.T) {
	e := startEnv(t, 4)
	t.Run("scenarios", func(t *testing.T) {
		t.Run("rolling update bounds", func(t *testing.T) { t.Parallel(); testRollingUpdateBounds(t, e) })
		t.Run("progress deadline", func(t *testing.T) { t.Parallel(); testProgressDeadline(t, e) })
		t.Run("garbage collector", func(t *testing.T) { t.Parallel(); testGarbageCollector(t, e) })
		t.Run("pdb status", func(t *testing.T) { t.Parallel(); testPDBStatus(t, e) })
		t.Run("resource quota usage", func(t *testing.T) { t.Parallel(); testResourceQuotaUsage(t, e) })
		t.Run("jobs", func(t *testing.T) { t.Parallel(); testJobs(t, e) })
	})
}

// deploymentBuilder makes test Deployments.
type deploymentBuilder struct{ d *appsv1.Deployment }

func newDeployment(namespace, name string, replicas int32) deploymentBuilder {
	labels := map[string]string{"app": name}
	return deploymentBuilder{&appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/" + name + ":v1"}}},
			},
		},
	}}
}

func (b deploymentBuilder) rolling(maxSurge, maxUnavailable int) deploymentBuilder {
	b.d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxSurge: ptr.To(intstr.FromInt(maxSurge)), MaxUnavailable: ptr.To(intstr.FromInt(maxUnavailable))}}
	return b
}

func (b deploymentBuilder) progressDeadline(seconds int32) deploymentBuilder {
	b.d.Spec.ProgressDeadlineSeconds = ptr.To(seconds)
	return b
}

func (b deploymentBuilder) nodeSelector(sel map[string]string) deploymentBuilder {
	b.d.Spec.Template.Spec.NodeSelector = sel
	return b
}

func (b deploymentBuilder) obj() *appsv1.Deployment { return b.d }

// rolledOut reports nil once the deployment's controller has observed its latest generation and
// every replica is updated and available, the test `kubectl rollout status` makes.
func rolledOut(ctx context.Context, e *env, namespace, name string) error {
	d, err := e.client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	want := *d.Spec.Replicas
	s := d.Status
	if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != want || s.Replicas != want || s.AvailableReplicas != want {
		return fmt.Errorf("deployment %s: generation %d observed %d, replicas %d updated %d available %d, want %d",
			name, d.Generation, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.AvailableReplicas, want)
	}
	return nil
}

// rolloutSampler watches a namespace's ReplicaSets and pods during a rollout and records the
// extremes of what maxSurge and maxUnavailable bound: the sum of the ReplicaSets' desired
// replicas and the number of ready pods not being deleted. Each figure comes from one resource's
// watch, which delivers a consistent sequence of states.
type rolloutSampler struct {
	mu                      sync.Mutex
	maxDesired, minReady    int
	maxLivePods             int
	replicaSets, pods       cache.Store
	desiredSamples, samples int
	trace                   []string
}

func (s *rolloutSampler) onReplicaSet() {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := 0
	var desc []string
	for _, obj := range s.replicaSets.List() {
		rs := obj.(*appsv1.ReplicaSet)
		total += int(ptr.Deref(rs.Spec.Replicas, 0))
		var mf []string
		for _, m := range rs.ManagedFields {
			mf = append(mf, fmt.Sprintf("%s/%s/%s@%s", m.Manager, m.Operation, m.Subresource, m.Time.Format("05")))
		}
		desc = append(desc, fmt.Sprintf("%s=%d(rv %s, gen %d, mf %v)", rs.Name[len(rs.Name)-3:], ptr.Deref(rs.Spec.Replicas, 0), rs.ResourceVersion, rs.Generation, mf))
	}
	s.trace = append(s.trace, fmt.Sprintf("%d: %s", total, strings.Join(desc, " ")))
	s.maxDesired = max(s.maxDesired, total)
	s.desiredSamples++
}

func (s *rolloutSampler) onPod() {
	s.mu.Lock()
	defer s.mu.Unlock()
	ready, live := 0, 0
	for _, obj := range s.pods.List() {
		p := obj.(*corev1.Pod)
		if p.DeletionTimestamp != nil {
			continue
		}
		live++
		if podReady(p) {
			ready++
		}
	}
	s.minReady = min(s.minReady, ready)
	s.maxLivePods = max(s.maxLivePods, live)
	s.samples++
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func testRollingUpdateBounds(t *testing.T, e *env) {
	ctx := context.Background()
	ns := e.namespace(t, "rolling")
	const replicas, maxSurge, maxUnavailable = 12, 3, 2
	d, err := e.client.AppsV1().Deployments(ns).Create(ctx, newDeployment(ns, "roll", replicas).rolling(maxSurge, maxUnavailable).obj(), metav1.CreateOptions{})
	must(t, err, "create deployment")
	waitFor(t, 60*time.Second, func() error { return rolledOut(ctx, e, ns, "roll") })

	factory := informers.NewSharedInformerFactoryWithOptions(e.client, 0, informers.WithNamespace(ns))
	rsInformer, podInformer := factory.Apps().V1().ReplicaSets().Informer(), factory.Core().V1().Pods().Informer()
	s := &rolloutSampler{minReady: replicas, replicaSets: rsInformer.GetStore(), pods: podInformer.GetStore()}
	handler := func(f func()) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{AddFunc: func(any) { f() }, UpdateFunc: func(any, any) { f() }, DeleteFunc: func(any) { f() }}
	}
	_, err = rsInformer.AddEventHandler(handler(s.onReplicaSet))
	must(t, err, "rs handler")
	_, err = podInformer.AddEventHandler(handler(s.onPod))
	must(t, err, "pod handler")
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() { close(stop); factory.Shutdown() }()
	factory.WaitForCacheSync(stop)

	d.Spec.Template.Spec.Containers[0].Image = "registry.example/roll:v2"
	waitFor(t, 10*time.Second, func() error {
		cur, err := e.client.AppsV1().Deployments(ns).Get(ctx, "roll", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Template.Spec.Containers[0].Image = "registry.example/roll:v2"
		_, err = e.client.AppsV1().Deployments(ns).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	waitFor(t, 90*time.Second, func() error { return rolledOut(ctx, e, ns, "roll") })
	// Let the last deletions reach the informers.
	waitFor(t, 30*time.Second, func() error {
		pods, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(pods.Items) != replicas {
			return fmt.Errorf("%d pods, want %d", len(pods.Items), replicas)
		}
		for _, p := range pods.Items {
			if p.Spec.Containers[0].Image != "registry.example/roll:v2" {
				return fmt.Errorf("pod %s still runs %s", p.Name, p.Spec.Containers[0].Image)
			}
		}
		return nil
	})

	s.mu.Lock()
	defer s.mu.Unlock()
	t.Logf("samples: %d ReplicaSet, %d pod; max desired %d, max live pods %d, min ready %d",
		s.desiredSamples, s.samples, s.maxDesired, s.maxLivePods, s.minReady)
	if s.maxDesired > replicas+maxSurge {
		t.Logf("trace:\n%s", strings.Join(s.trace, "\n"))
		t.Errorf("ReplicaSets wanted %d pods at once, above replicas+maxSurge = %d", s.maxDesired, replicas+maxSurge)
	}
	if s.maxDesired <= replicas {
		t.Errorf("ReplicaSets never wanted more than %d pods: the rollout did not surge", s.maxDesired)
	}
	if s.minReady < replicas-maxUnavailable {
		t.Errorf("only %d ready pods at one point, below replicas-maxUnavailable = %d", s.minReady, replicas-maxUnavailable)
	}
	// Pods being created for the new ReplicaSet may briefly overlap pods the old one is still
	// deleting (the deployment controller bounds desired replicas, not pod objects), so this bound
	// allows one maxUnavailable-sized step of overlap.
	if s.maxLivePods > replicas+maxSurge+maxUnavailable {
		t.Errorf("%d live pods at once, far above replicas+maxSurge = %d", s.maxLivePods, replicas+maxSurge)
	}
	rsList, err := e.client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	must(t, err, "list replicasets")
	if len(rsList.Items) != 2 {
		t.Fatalf("%d ReplicaSets after one rollout, want 2", len(rsList.Items))
	}
	for _, rs := range rsList.Items {
		want := int32(0)
		if rs.Spec.Template.Spec.Containers[0].Image == "registry.example/roll:v2" {
			want = replicas
		}
		if got := ptr.Deref(rs.Spec.Replicas, -1); got != want {
			t.Errorf("ReplicaSet %s (%s) replicas %d, want %d", rs.Name, rs.Spec.Template.Spec.Containers[0].Image, got, want)
		}
	}
}

func testProgressDeadline(t *testing.T, e *env) {
	ctx := context.Background()
	ns := e.namespace(t, "deadline")
	// No node has this label: the pods stay Pending and the rollout cannot progress.
	d := newDeployment(ns, "stuck", 2).progressDeadline(3).nodeSelector(map[string]string{"integration.skiff.sh/none": "true"}).obj()
	_, err := e.client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	must(t, err, "create deployment")
	var progressing appsv1.DeploymentCondition
	waitFor(t, 60*time.Second, func() error {
		cur, err := e.client.AppsV1().Deployments(ns).Get(ctx, "stuck", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range cur.Status.Conditions {
			if c.Type == appsv1.DeploymentProgressing {
				progressing = c
			}
		}
		if progressing.Reason != "ProgressDeadlineExceeded" {
			return fmt.Errorf("Progressing condition %+v", progressing)
		}
		return nil
	})
	if progressing.Status != corev1.ConditionFalse {
		t.Errorf("Progressing status = %s, want False", progressing.Status)
	}
	if !strings.Contains(progressing.Message, "has timed out progressing") {
		t.Errorf("Progressing message = %q, want it to say the ReplicaSet timed out", progressing.Message)
	}
	cur, err := e.client.AppsV1().Deployments(ns).Get(ctx, "stuck", metav1.GetOptions{})
	must(t, err, "get deployment")
	for _, c := range cur.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status != corev1.ConditionFalse {
			t.Errorf("Available = %s with no pod running, want False", c.Status)
		}
	}
}

// configMap builds a ConfigMap, optionally owned and with finalizers.
func configMap(namespace, name string, finalizers []string, owners ...metav1.OwnerReference) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Finalizers: finalizers, OwnerReferences: owners}}
}

func ownedBy(owner *corev1.ConfigMap, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptr.To(block)}
}

const holdFinalizer = "integration.skiff.sh/hold"

func testGarbageCollector(t *testing.T, e *env) {
	ctx := context.Background()
	ns := e.namespace(t, "gc")
	cms := e.client.CoreV1().ConfigMaps(ns)
	create := func(cm *corev1.ConfigMap) *corev1.ConfigMap {
		t.Helper()
		out, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		must(t, err, "create configmap", cm.Name)
		return out
	}
	getOrNil := func(name string) *corev1.ConfigMap {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return cm
	}
	deleteWith := func(name string, policy metav1.DeletionPropagation) {
		t.Helper()
		must(t, cms.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy}), "delete", name)
	}
	dropFinalizers := func(name string) {
		t.Helper()
		_, err := cms.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		must(t, err, "remove finalizers of", name)
	}

	t.Run("background", func(t *testing.T) {
		owner := create(configMap(ns, "bg-owner", nil))
		create(configMap(ns, "bg-a", nil, ownedBy(owner, false)))
		create(configMap(ns, "bg-b", nil, ownedBy(owner, true)))
		deleteWith("bg-owner", metav1.DeletePropagationBackground)
		// The owner goes at once; its dependents follow.
		if getOrNil("bg-owner") != nil {
			t.Fatal("owner still exists right after a background delete")
		}
		waitFor(t, 30*time.Second, func() error {
			for _, name := range []string{"bg-a", "bg-b"} {
				if getOrNil(name) != nil {
					return fmt.Errorf("dependent %s still exists", name)
				}
			}
			return nil
		})
	})

	t.Run("foreground with blockOwnerDeletion", func(t *testing.T) {
		owner := create(configMap(ns, "fg-owner", nil))
		create(configMap(ns, "fg-plain", nil, ownedBy(owner, true)))
		create(configMap(ns, "fg-blocking", []string{holdFinalizer}, ownedBy(owner, true)))
		create(configMap(ns, "fg-nonblocking", []string{holdFinalizer}, ownedBy(owner, false)))
		deleteWith("fg-owner", metav1.DeletePropagationForeground)

		waitFor(t, 30*time.Second, func() error {
			if getOrNil("fg-plain") != nil {
				return fmt.Errorf("fg-plain not deleted yet")
			}
			for _, name := range []string{"fg-blocking", "fg-nonblocking"} {
				if cm := getOrNil(name); cm == nil || cm.DeletionTimestamp == nil {
					return fmt.Errorf("%s not being deleted: %+v", name, cm)
				}
			}
			return nil
		})
		// The blocking dependent keeps the owner; give a wrong garbage collector time to err.
		time.Sleep(2 * time.Second)
		ownerNow := getOrNil("fg-owner")
		if ownerNow == nil {
			t.Fatal("owner deleted while a blockOwnerDeletion dependent still exists")
		}
		if ownerNow.DeletionTimestamp == nil || !contains(ownerNow.Finalizers, metav1.FinalizerDeleteDependents) {
			t.Fatalf("owner deletionTimestamp %v finalizers %v, want deleting with %s", ownerNow.DeletionTimestamp, ownerNow.Finalizers, metav1.FinalizerDeleteDependents)
		}
		dropFinalizers("fg-blocking")
		waitFor(t, 30*time.Second, func() error {
			_, err := cms.Get(ctx, "fg-owner", metav1.GetOptions{})
			return gone(err, "fg-owner")
		})
		// The non-blocking dependent did not hold the owner; it waits for its own finalizer.
		if cm := getOrNil("fg-nonblocking"); cm == nil || cm.DeletionTimestamp == nil {
			t.Fatalf("fg-nonblocking = %+v, want still present and being deleted", cm)
		}
		dropFinalizers("fg-nonblocking")
		waitFor(t, 30*time.Second, func() error {
			_, err := cms.Get(ctx, "fg-nonblocking", metav1.GetOptions{})
			return gone(err, "fg-nonblocking")
		})
	})

	t.Run("orphan", func(t *testing.T) {
		owner := create(configMap(ns, "or-owner", nil))
		other := create(configMap(ns, "or-other", nil))
		create(configMap(ns, "or-dep", nil, ownedBy(owner, true), ownedBy(other, false)))
		deleteWith("or-owner", metav1.DeletePropagationOrphan)
		waitFor(t, 30*time.Second, func() error {
			_, err := cms.Get(ctx, "or-owner", metav1.GetOptions{})
			return gone(err, "or-owner")
		})
		time.Sleep(time.Second)
		dep := getOrNil("or-dep")
		if dep == nil {
			t.Fatal("orphaned dependent was deleted")
		}
		if len(dep.OwnerReferences) != 1 || dep.OwnerReferences[0].UID != other.UID {
			t.Fatalf("orphaned dependent's owner references = %+v, want only or-other", dep.OwnerReferences)
		}
	})

	t.Run("dangling owner", func(t *testing.T) {
		create(configMap(ns, "dangling", nil, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "never-existed", UID: "00000000-0000-0000-0000-000000000001"}))
		// An owner of the same name but another UID is not the owner: the dependent still goes.
		create(configMap(ns, "impostor-owner", nil))
		create(configMap(ns, "wrong-uid", nil, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "impostor-owner", UID: "00000000-0000-0000-0000-000000000002"}))
		waitFor(t, 30*time.Second, func() error {
			for _, name := range []string{"dangling", "wrong-uid"} {
				if getOrNil(name) != nil {
					return fmt.Errorf("%s with a missing owner still exists", name)
				}
			}
			return nil
		})
		if getOrNil("impostor-owner") == nil {
			t.Fatal("the unrelated same-name object was deleted")
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// manualPod is a pod bound to a node no simulator plays, so the test sets its status itself.
func manualPod(namespace, name, node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "registry.example/manual:v1"}}},
	}
}

// setReady plays the kubelet: the pod is Running with Ready as given.
func setReady(ctx context.Context, t *testing.T, e *env, pod *corev1.Pod, ready bool) {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	waitFor(t, 10*time.Second, func() error {
		cur, err := e.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		cur.Status.Phase = corev1.PodRunning
		cur.Status.PodIP = fmt.Sprintf("10.250.%d.%d", len(pod.Name), pod.Name[len(pod.Name)-1])
		cur.Status.PodIPs = []corev1.PodIP{{IP: cur.Status.PodIP}}
		cur.Status.StartTime = &now
		cur.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodReady, Status: status, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: status, LastTransitionTime: now},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
		_, err = e.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

// manualNode registers a Node no simulator plays, so pods bound to it are left to the test.
func manualNode(ctx context.Context, t *testing.T, e *env, name string) {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := e.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	must(t, err, "create node", name)
	// Ready, as its kubelet would report: the node lifecycle controller marks the pods of a node
	// that never reported NotReady. One heartbeat lasts the grace period (40 s), longer than the test.
	waitFor(t, 10*time.Second, func() error {
		cur, err := e.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		cur.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
		_, err = e.client.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	t.Cleanup(func() { _ = e.client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

func testPDBStatus(t *testing.T, e *env) {
	ctx := context.Background()
	ns := e.namespace(t, "pdb")
	manualNode(ctx, t, e, "manual-pdb")
	labels := map[string]string{"app": "guarded"}
	var pods []*corev1.Pod
	for i := range 3 {
		p, err := e.client.CoreV1().Pods(ns).Create(ctx, manualPod(ns, fmt.Sprintf("guarded-%d", i), "manual-pdb", labels), metav1.CreateOptions{})
		must(t, err, "create pod")
		pods = append(pods, p)
		setReady(ctx, t, e, p, true)
	}
	pdb, err := e.client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "guard"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt(2)),
			Selector:     &metav1.LabelSelector{MatchLabels: labels},
		},
	}, metav1.CreateOptions{})
	must(t, err, "create pdb")

	type want struct {
		expected, healthy, desired, allowed int32
		condition                           metav1.ConditionStatus
		reason                              string
	}
	expect := func(w want) {
		t.Helper()
		waitFor(t, 30*time.Second, func() error {
			cur, err := e.client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "guard", metav1.GetOptions{})
			if err != nil {
				return err
			}
			s := cur.Status
			var cond metav1.Condition
			for _, c := range s.Conditions {
				if c.Type == policyv1.DisruptionAllowedCondition {
					cond = c
				}
			}
			got := want{s.ExpectedPods, s.CurrentHealthy, s.DesiredHealthy, s.DisruptionsAllowed, cond.Status, cond.Reason}
			if got != w || s.ObservedGeneration != pdb.Generation {
				return fmt.Errorf("status %+v (observed generation %d of %d), want %+v", got, s.ObservedGeneration, pdb.Generation, w)
			}
			return nil
		})
	}
	expect(want{expected: 3, healthy: 3, desired: 2, allowed: 1, condition: metav1.ConditionTrue, reason: policyv1.SufficientPodsReason})
	setReady(ctx, t, e, pods[0], false)
	expect(want{expected: 3, healthy: 2, desired: 2, allowed: 0, condition: metav1.ConditionFalse, reason: policyv1.InsufficientPodsReason})
	setReady(ctx, t, e, pods[0], true)
	expect(want{expected: 3, healthy: 3, desired: 2, allowed: 1, condition: metav1.ConditionTrue, reason: policyv1.SufficientPodsReason})
	must(t, e.client.CoreV1().Pods(ns).Delete(ctx, pods[2].Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}), "delete pod")
	expect(want{expected: 2, healthy: 2, desired: 2, allowed: 0, condition: metav1.ConditionFalse, reason: policyv1.InsufficientPodsReason})
}

func testResourceQuotaUsage(t *testing.T, e *env) {
	ctx := context.Background()
	ns := e.namespace(t, "quota")
	hard := corev1.ResourceList{
		corev1.ResourcePods:           resource.MustParse("10"),
		corev1.ResourceRequestsCPU:    resource.MustParse("2"),
		corev1.ResourceRequestsMemory: resource.MustParse("1Gi"),
		corev1.ResourceLimitsCPU:      resource.MustParse("4"),
		corev1.ResourceConfigMaps:     resource.MustParse("10"),
		corev1.ResourceServices:       resource.MustParse("5"),
		"count/deployments.apps":      resource.MustParse("3"),
	}
	_, err := e.client.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quota"},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
	}, metav1.CreateOptions{})
	must(t, err, "create quota")
	// ResourceQuota admission refuses what the quota covers ("status unknown for quota") until the
	// controller has recorded its usage, as Kubernetes' does.
	waitFor(t, 30*time.Second, func() error {
		q, err := e.client.CoreV1().ResourceQuotas(ns).Get(ctx, "quota", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for name := range hard {
			if _, ok := q.Status.Used[name]; !ok {
				return fmt.Errorf("status.used[%s] not recorded yet: %v", name, q.Status.Used)
			}
		}
		return nil
	})

	// Unschedulable pods: only the quota controller looks at them.
	for i := range 3 {
		p := manualPod(ns, fmt.Sprintf("q-%d", i), "", nil)
		p.Spec.NodeSelector = map[string]string{"integration.skiff.sh/none": "true"}
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		}
		_, err := e.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		must(t, err, "create pod")
	}
	for _, name := range []string{"a", "b"} {
		_, err := e.client.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, name, nil), metav1.CreateOptions{})
		must(t, err, "create configmap")
	}
	_, err = e.client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "svc"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{})
	must(t, err, "create service")
	_, err = e.client.AppsV1().Deployments(ns).Create(ctx, newDeployment(ns, "zero", 0).obj(), metav1.CreateOptions{})
	must(t, err, "create deployment")

	expectUsed := func(want map[corev1.ResourceName]string) {
		t.Helper()
		waitFor(t, 30*time.Second, func() error {
			q, err := e.client.CoreV1().ResourceQuotas(ns).Get(ctx, "quota", metav1.GetOptions{})
			if err != nil {
				return err
			}
			for name, wantHard := range hard {
				if hq := q.Status.Hard[name]; hq.Cmp(wantHard) != 0 {
					return fmt.Errorf("status.hard[%s] = %s, want %s", name, hq.String(), wantHard.String())
				}
			}
			// Other controllers publish objects into every namespace (kube-root-ca.crt), which
			// the quota counts as Kubernetes' does: expect whatever is there.
			cms, err := e.client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			want[corev1.ResourceConfigMaps] = fmt.Sprint(len(cms.Items))
			for name, v := range want {
				got, ok := q.Status.Used[name]
				if !ok || got.Cmp(resource.MustParse(v)) != 0 {
					return fmt.Errorf("status.used[%s] = %s (set %v), want %s; used %v", name, got.String(), ok, v, q.Status.Used)
				}
			}
			return nil
		})
	}
	expectUsed(map[corev1.ResourceName]string{
		corev1.ResourcePods: "3", corev1.ResourceRequestsCPU: "750m", corev1.ResourceRequestsMemory: "192Mi",
		corev1.ResourceLimitsCPU: "1500m", corev1.ResourceServices: "1",
		"count/deployments.apps": "1",
	})

	// A finished pod no longer uses quota; a deleted one neither.
	cur, err := e.client.CoreV1().Pods(ns).Get(ctx, "q-0", metav1.GetOptions{})
	must(t, err, "get pod")
	cur.Status.Phase = corev1.PodSucceeded
	_, err = e.client.CoreV1().Pods(ns).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	must(t, err, "finish pod")
	must(t, e.client.CoreV1().Pods(ns).Delete(ctx, "q-1", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}), "delete pod")
	must(t, e.client.CoreV1().ConfigMaps(ns).Delete(ctx, "a", metav1.DeleteOptions{}), "delete configmap")
	expectUsed(map[corev1.ResourceName]string{
		corev1.ResourcePods: "1", corev1.ResourceRequestsCPU: "250m", corev1.ResourceRequestsMemory: "64Mi",
		corev1.ResourceLimitsCPU: "500m", corev1.ResourceServices: "1",
		"count/deployments.apps": "1",
	})
}
