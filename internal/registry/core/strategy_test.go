package core

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/skiff-sh/skiff/internal/registry"
)

func resourceByPlural(t *testing.T, plural string) *registry.Resource {
	t.Helper()
	for _, r := range Resources() {
		if r.Plural == plural {
			return r
		}
	}
	t.Fatalf("no resource %q", plural)
	return nil
}

func TestResourcesDiscoveryNames(t *testing.T) {
	type want struct {
		kind, singular string
		short          []string
		categories     []string
		namespaced     bool
		status         bool
	}
	wants := map[string]want{
		"namespaces":             {"Namespace", "namespace", []string{"ns"}, nil, false, true},
		"pods":                   {"Pod", "pod", []string{"po"}, []string{"all"}, true, true},
		"nodes":                  {"Node", "node", []string{"no"}, nil, false, true},
		"services":               {"Service", "service", []string{"svc"}, []string{"all"}, true, true},
		"endpoints":              {"Endpoints", "endpoints", []string{"ep"}, nil, true, false},
		"configmaps":             {"ConfigMap", "configmap", []string{"cm"}, nil, true, false},
		"podtemplates":           {"PodTemplate", "podtemplate", nil, nil, true, false},
		"bindings":               {"Binding", "binding", nil, nil, true, false},
		"replicationcontrollers": {"ReplicationController", "replicationcontroller", []string{"rc"}, []string{"all"}, true, true},
		"componentstatuses":      {"ComponentStatus", "componentstatus", []string{"cs"}, nil, false, false},
		"secrets":                {"Secret", "secret", nil, nil, true, false},
		"serviceaccounts":        {"ServiceAccount", "serviceaccount", []string{"sa"}, nil, true, false},
		"events":                 {"Event", "event", []string{"ev"}, nil, true, false},
		"limitranges":            {"LimitRange", "limitrange", []string{"limits"}, nil, true, false},
		"resourcequotas":         {"ResourceQuota", "resourcequota", []string{"quota"}, nil, true, true},
		"persistentvolumes":      {"PersistentVolume", "persistentvolume", []string{"pv"}, nil, false, true},
		"persistentvolumeclaims": {"PersistentVolumeClaim", "persistentvolumeclaim", []string{"pvc"}, nil, true, true},
	}
	resources := Resources()
	if len(resources) != len(wants) {
		t.Fatalf("got %d resources, want %d", len(resources), len(wants))
	}
	for _, r := range resources {
		w, ok := wants[r.Plural]
		if !ok {
			t.Errorf("unexpected resource %q", r.Plural)
			continue
		}
		if r.Kind != w.kind || r.ListKind != w.kind+"List" || r.Singular != w.singular || r.Namespaced != w.namespaced {
			t.Errorf("%s: kind=%s listKind=%s singular=%s namespaced=%v", r.Plural, r.Kind, r.ListKind, r.Singular, r.Namespaced)
		}
		if !equalStrings(r.ShortNames, w.short) || !equalStrings(r.Categories, w.categories) {
			t.Errorf("%s: shortNames=%v categories=%v", r.Plural, r.ShortNames, r.Categories)
		}
		if (r.Status != nil) != w.status {
			t.Errorf("%s: status subresource = %v, want %v", r.Plural, r.Status != nil, w.status)
		}
		if r.GroupVersion.Group != "" || r.GroupVersion.Version != "v1" || r.Strategy == nil || r.Printer != nil {
			t.Errorf("%s: gv=%v strategy=%v printer=%v", r.Plural, r.GroupVersion, r.Strategy, r.Printer)
		}
		obj, list := r.New(), r.NewList()
		if kind := kindOf(t, obj); kind != r.Kind {
			t.Errorf("%s: New() is a %s", r.Plural, kind)
		}
		if r.Plural == "bindings" {
			// Bindings are only ever created: there is no BindingList type.
			continue
		}
		if kind := kindOf(t, list); kind != r.ListKind {
			t.Errorf("%s: NewList() is a %s", r.Plural, kind)
		}
	}
}

func kindOf(t *testing.T, obj runtime.Object) string {
	t.Helper()
	s := newDefaultingScheme(t)
	gvks, _, err := s.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	return gvks[0].Kind
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAllowCreateAndUnconditionalUpdate(t *testing.T) {
	createOnUpdate := map[string]bool{"services": true, "endpoints": true, "serviceaccounts": true, "events": true, "limitranges": true}
	for _, r := range Resources() {
		if got := r.Strategy.AllowCreateOnUpdate(); got != createOnUpdate[r.Plural] {
			t.Errorf("%s: AllowCreateOnUpdate = %v", r.Plural, got)
		}
		// Every core resource accepts a PUT without a resourceVersion, as in Kubernetes; computed
		// componentstatuses and bindings take no updates at all.
		if got := r.Strategy.AllowUnconditionalUpdate(); got != (r.Plural != "componentstatuses" && r.Plural != "bindings") {
			t.Errorf("%s: AllowUnconditionalUpdate = %v", r.Plural, got)
		}
	}
}

func TestSelectableFields(t *testing.T) {
	pod := makePod("web").node("n1").with(func(p *corev1.Pod) {
		p.Spec.ServiceAccountName = "builder"
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: "10.0.0.5"}}, NominatedNodeName: "n2"}
	}).obj()
	got := resourceByPlural(t, "pods").SelectableFields(pod)
	for k, v := range map[string]string{
		"spec.nodeName": "n1", "spec.restartPolicy": "Always", "spec.schedulerName": "default-scheduler",
		"spec.serviceAccountName": "builder", "spec.hostNetwork": "false", "status.phase": "Running",
		"status.podIP": "10.0.0.5", "status.nominatedNodeName": "n2",
	} {
		if got[k] != v {
			t.Errorf("pod field %s = %q, want %q", k, got[k], v)
		}
	}

	node := &corev1.Node{Spec: corev1.NodeSpec{Unschedulable: true}}
	if got := resourceByPlural(t, "nodes").SelectableFields(node)["spec.unschedulable"]; got != "true" {
		t.Errorf("spec.unschedulable = %q", got)
	}
	secret := &corev1.Secret{Type: corev1.SecretTypeTLS}
	if got := resourceByPlural(t, "secrets").SelectableFields(secret)["type"]; got != string(corev1.SecretTypeTLS) {
		t.Errorf("secret type = %q", got)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	if f := resourceByPlural(t, "namespaces").SelectableFields(ns); f["status.phase"] != "Active" || f["name"] != "a" {
		t.Errorf("namespace fields = %v", f)
	}
	ev := &corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", Namespace: "default", UID: "u1"}, Reason: "Pulled", Type: "Normal", ReportingController: "kubelet"}
	f := resourceByPlural(t, "events").SelectableFields(ev)
	if f["involvedObject.kind"] != "Pod" || f["involvedObject.name"] != "web" || f["involvedObject.uid"] != "u1" || f["reason"] != "Pulled" ||
		f["type"] != "Normal" || f["reportingComponent"] != "kubelet" || f["source"] != "kubelet" {
		t.Errorf("event fields = %v", f)
	}
	if f := resourceByPlural(t, "persistentvolumeclaims").SelectableFields(makePVC()); f["name"] != "data" {
		t.Errorf("pvc fields = %v", f)
	}
	if resourceByPlural(t, "configmaps").SelectableFields != nil {
		t.Error("configmaps have only metadata fields")
	}
}

func TestPodStrategyCreateAndUpdate(t *testing.T) {
	ctx := context.Background()
	s := resourceByPlural(t, "pods").Strategy

	cases := map[string]struct {
		pod  *corev1.Pod
		want corev1.PodQOSClass
	}{
		"best effort":                 {makePod("a").obj(), corev1.PodQOSBestEffort},
		"guaranteed":                  {makePod("b").resources(corev1.ResourceList{"cpu": qty("1"), "memory": qty("1Gi")}, nil).obj(), corev1.PodQOSGuaranteed},
		"burstable":                   {makePod("c").resources(nil, corev1.ResourceList{"cpu": qty("100m")}).obj(), corev1.PodQOSBurstable},
		"cpu limit only is burstable": {makePod("d").resources(corev1.ResourceList{"cpu": qty("1")}, nil).obj(), corev1.PodQOSBurstable},
		"request below limit":         {makePod("e").resources(corev1.ResourceList{"cpu": qty("1"), "memory": qty("1Gi")}, corev1.ResourceList{"cpu": qty("500m")}).obj(), corev1.PodQOSBurstable},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			pod := c.pod
			pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "1.2.3.4"}
			s.PrepareForCreate(ctx, pod)
			if pod.Status.Phase != corev1.PodPending || pod.Status.PodIP != "" || pod.Status.QOSClass != c.want {
				t.Fatalf("status = %+v, want Pending with QOS %s", pod.Status, c.want)
			}
			if pod.Generation != 1 {
				t.Fatalf("generation = %d", pod.Generation)
			}
		})
	}

	gated := makePod("g").with(func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}} }).obj()
	s.PrepareForCreate(ctx, gated)
	if len(gated.Status.Conditions) != 1 || gated.Status.Conditions[0].Reason != corev1.PodReasonSchedulingGated {
		t.Fatalf("gated pod conditions = %+v", gated.Status.Conditions)
	}

	old := makePod("web").obj()
	s.PrepareForCreate(ctx, old)
	old.Status.Phase = corev1.PodRunning

	sameSpec := old.DeepCopy()
	sameSpec.Labels = map[string]string{"a": "b"}
	sameSpec.Status = corev1.PodStatus{}
	s.PrepareForUpdate(ctx, sameSpec, old)
	if sameSpec.Status.Phase != corev1.PodRunning || sameSpec.Generation != 1 {
		t.Fatalf("metadata-only update: status=%v generation=%d", sameSpec.Status.Phase, sameSpec.Generation)
	}
	newImage := old.DeepCopy()
	newImage.Spec.Containers[0].Image = "nginx:2"
	s.PrepareForUpdate(ctx, newImage, old)
	if newImage.Generation != 2 {
		t.Fatalf("spec update generation = %d, want 2", newImage.Generation)
	}
	requireNoErrors(t, s.ValidateUpdate(ctx, newImage, old))
	requireNoErrors(t, s.Validate(ctx, old))
	if errs := s.Validate(ctx, &corev1.Service{}); len(errs) != 1 || errs[0].Type != field.ErrorTypeInternal {
		t.Fatalf("wrong type: %v", errs)
	}
}

func TestPodStatusStrategyKeepsSpec(t *testing.T) {
	ctx := context.Background()
	status := resourceByPlural(t, "pods").Status
	old := makePod("web").node("n1").obj()
	pod := old.DeepCopy()
	pod.Spec.NodeName = "n2"
	pod.Labels = map[string]string{"changed": "yes"}
	pod.OwnerReferences = []metav1.OwnerReference{{Name: "other"}}
	pod.Status.Phase = corev1.PodRunning
	status.PrepareForUpdate(ctx, pod, old)
	// As Kubernetes: the spec and owner references are restored, labels may change (NodeRestriction
	// refuses a kubelet's label change, see the apiserver's admission tests).
	if pod.Spec.NodeName != "n1" || pod.Labels["changed"] != "yes" || pod.OwnerReferences != nil || pod.Status.Phase != corev1.PodRunning {
		t.Fatalf("after status prepare: node=%s labels=%v owners=%v phase=%s", pod.Spec.NodeName, pod.Labels, pod.OwnerReferences, pod.Status.Phase)
	}
	requireNoErrors(t, status.ValidateUpdate(ctx, pod, old))
}

func TestPodGracefulDelete(t *testing.T) {
	ctx := context.Background()
	deleter, ok := resourceByPlural(t, "pods").Strategy.(registry.GracefulDeleter)
	if !ok {
		t.Fatal("pod strategy is not a GracefulDeleter")
	}
	cases := []struct {
		name     string
		pod      *corev1.Pod
		options  *metav1.DeleteOptions
		graceful bool
		period   int64
	}{
		{"scheduled uses spec period", makePod("a").node("n1").obj(), &metav1.DeleteOptions{}, true, 30},
		{"custom spec period", makePod("a").node("n1").with(func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptrTo(int64(5)) }).obj(), &metav1.DeleteOptions{}, true, 5},
		{"request period wins", makePod("a").node("n1").obj(), &metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(12))}, true, 12},
		{"grace zero", makePod("a").node("n1").obj(), &metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))}, false, 0},
		{"unscheduled", makePod("a").obj(), &metav1.DeleteOptions{}, false, 0},
		{"finished", makePod("a").node("n1").with(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }).obj(), &metav1.DeleteOptions{}, false, 0},
		{"negative becomes one", makePod("a").node("n1").obj(), &metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(-5))}, true, 1},
		{"no spec period defaults to 30", makePod("a").node("n1").raw(), &metav1.DeleteOptions{}, true, 30},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := deleter.CheckGracefulDelete(ctx, c.pod, c.options)
			if got != c.graceful || c.options.GracePeriodSeconds == nil || *c.options.GracePeriodSeconds != c.period {
				t.Fatalf("graceful=%v period=%v, want %v %d", got, c.options.GracePeriodSeconds, c.graceful, c.period)
			}
		})
	}
	if deleter.CheckGracefulDelete(ctx, makePod("a").node("n1").obj(), nil) {
		t.Fatal("nil options must not be graceful")
	}
}

func TestNamespaceStrategies(t *testing.T) {
	ctx := context.Background()
	r := resourceByPlural(t, "namespaces")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	r.Strategy.PrepareForCreate(ctx, ns)
	if ns.Status.Phase != corev1.NamespaceActive || len(ns.Spec.Finalizers) != 1 || ns.Spec.Finalizers[0] != corev1.FinalizerKubernetes {
		t.Fatalf("created namespace = %+v", ns)
	}
	if ns.Labels[corev1.LabelMetadataName] != "team" {
		t.Fatalf("labels = %v", ns.Labels)
	}
	requireNoErrors(t, r.Strategy.Validate(ctx, ns))
	ns.ResourceVersion = "1"

	// The main resource cannot drop finalizers; /finalize can.
	update := ns.DeepCopy()
	update.Spec.Finalizers = nil
	r.Strategy.PrepareForUpdate(ctx, update, ns)
	if len(update.Spec.Finalizers) != 1 {
		t.Fatalf("main-resource update changed finalizers: %v", update.Spec.Finalizers)
	}

	finalize := ns.DeepCopy()
	finalize.Spec.Finalizers = nil
	finalize.Status.Phase = corev1.NamespaceTerminating
	finalize.Labels = map[string]string{"x": "y"}
	var fs registry.StatusStrategy = NamespaceFinalizeStrategy{}
	fs.PrepareForUpdate(ctx, finalize, ns)
	if len(finalize.Spec.Finalizers) != 0 || finalize.Status.Phase != corev1.NamespaceActive || finalize.Labels["x"] != "" {
		t.Fatalf("finalize result = %+v", finalize)
	}
	requireNoErrors(t, fs.ValidateUpdate(ctx, finalize, ns))
	bad := finalize.DeepCopy()
	bad.Spec.Finalizers = []corev1.FinalizerName{"not qualified"}
	if errs := fs.ValidateUpdate(ctx, bad, ns); len(errs) == 0 {
		t.Fatal("want an error for a bad finalizer name")
	}
	if _, ok := any(fs).(registry.ResetFieldsProvider); !ok {
		t.Fatal("finalize strategy must report reset fields")
	}
}

func TestStatusSubresourcesResetSpec(t *testing.T) {
	ctx := context.Background()

	svcRes := resourceByPlural(t, "services")
	oldSvc := makeService("web")
	svc := oldSvc.DeepCopy()
	svc.Spec.Ports[0].Port = 81
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
	svcRes.Status.PrepareForUpdate(ctx, svc, oldSvc)
	if svc.Spec.Ports[0].Port != 80 || len(svc.Status.LoadBalancer.Ingress) != 1 {
		t.Fatalf("service after status update: %+v", svc)
	}

	quota := resourceByPlural(t, "resourcequotas")
	oldQ := &corev1.ResourceQuota{ObjectMeta: meta("q"), Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": qty("5")}}}
	q := oldQ.DeepCopy()
	q.Spec.Hard["pods"] = qty("50")
	q.Status.Used = corev1.ResourceList{"pods": qty("2")}
	quota.Status.PrepareForUpdate(ctx, q, oldQ)
	if q.Spec.Hard.Pods().Value() != 5 || q.Status.Used.Pods().Value() != 2 {
		t.Fatalf("quota after status update: %+v", q)
	}
	requireNoErrors(t, quota.Status.ValidateUpdate(ctx, q, oldQ))

	// A main-resource update of a quota keeps the stored status.
	main := oldQ.DeepCopy()
	main.Status.Used = corev1.ResourceList{"pods": qty("1")}
	stored := oldQ.DeepCopy()
	stored.Status.Used = corev1.ResourceList{"pods": qty("3")}
	quota.Strategy.PrepareForUpdate(ctx, main, stored)
	if main.Status.Used.Pods().Value() != 3 {
		t.Fatalf("quota main update took status %v", main.Status.Used)
	}
}

func TestResetFields(t *testing.T) {
	for _, r := range Resources() {
		if r.Status == nil {
			continue
		}
		main, ok := r.Strategy.(registry.ResetFieldsProvider)
		if !ok {
			t.Errorf("%s: strategy lacks reset fields", r.Plural)
			continue
		}
		if !main.GetResetFields()["v1"].Has(fieldpath.MakePathOrDie("status")) {
			t.Errorf("%s: main resource must reset status", r.Plural)
		}
		status, ok := r.Status.(registry.ResetFieldsProvider)
		if !ok || !status.GetResetFields()["v1"].Has(fieldpath.MakePathOrDie("spec")) {
			t.Errorf("%s: status subresource must reset spec", r.Plural)
		}
	}
}

func TestServiceStrategyKeepsAllocatedValues(t *testing.T) {
	ctx := context.Background()
	s := resourceByPlural(t, "services").Strategy
	old := makeService("web")
	old.Spec.Type = corev1.ServiceTypeNodePort
	old.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	old.Spec.ClusterIP, old.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}
	old.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	old.Spec.Ports[0].NodePort = 30080

	// A re-applied manifest without the allocated values.
	update := makeService("web")
	update.Spec.Type = corev1.ServiceTypeNodePort
	update.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	s.PrepareForUpdate(ctx, update, old)
	if update.Spec.ClusterIP != "10.96.0.10" || update.Spec.Ports[0].NodePort != 30080 || len(update.Spec.IPFamilies) != 1 {
		t.Fatalf("allocated values lost: %+v", update.Spec)
	}
	requireNoErrors(t, s.ValidateUpdate(ctx, update, old))

	// Back to ClusterIP drops the node port.
	toClusterIP := old.DeepCopy()
	toClusterIP.Spec.Type = corev1.ServiceTypeClusterIP
	s.PrepareForUpdate(ctx, toClusterIP, old)
	if toClusterIP.Spec.Ports[0].NodePort != 0 || toClusterIP.Spec.ExternalTrafficPolicy != "" {
		t.Fatalf("node port kept on ClusterIP: %+v", toClusterIP.Spec)
	}
	requireNoErrors(t, s.ValidateUpdate(ctx, toClusterIP, old))

	created := makeService("new")
	created.Spec.ClusterIP = "10.96.0.20"
	created.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
	s.PrepareForCreate(ctx, created)
	if len(created.Spec.ClusterIPs) != 1 || created.Spec.ClusterIPs[0] != "10.96.0.20" || len(created.Status.LoadBalancer.Ingress) != 0 {
		t.Fatalf("created service = %+v", created)
	}
}

func TestSecretStrategyMergesStringData(t *testing.T) {
	ctx := context.Background()
	s := resourceByPlural(t, "secrets").Strategy
	secret := &corev1.Secret{ObjectMeta: meta("s"), Type: corev1.SecretTypeOpaque, StringData: map[string]string{"k": "v"}}
	s.PrepareForCreate(ctx, secret)
	if string(secret.Data["k"]) != "v" || secret.StringData != nil {
		t.Fatalf("secret = %+v", secret)
	}
}

func TestNodeStrategy(t *testing.T) {
	ctx := context.Background()
	r := resourceByPlural(t, "nodes")
	node := &corev1.Node{ObjectMeta: clusterMeta("n1"), Status: corev1.NodeStatus{Capacity: corev1.ResourceList{"cpu": qty("4")}}}
	r.Strategy.PrepareForCreate(ctx, node)
	if node.Status.Capacity.Cpu().Value() != 4 {
		t.Fatal("a node may register with its status")
	}
	update := node.DeepCopy()
	update.Spec.Unschedulable = true
	update.Status.Capacity = nil
	r.Strategy.PrepareForUpdate(ctx, update, node)
	if update.Status.Capacity.Cpu().Value() != 4 || !update.Spec.Unschedulable {
		t.Fatalf("node update = %+v", update)
	}
	requireNoErrors(t, r.Strategy.ValidateUpdate(ctx, update, node))

	status := node.DeepCopy()
	status.Spec.Unschedulable = true
	status.Status.Capacity = corev1.ResourceList{"cpu": qty("8")}
	r.Status.PrepareForUpdate(ctx, status, node)
	if status.Spec.Unschedulable || status.Status.Capacity.Cpu().Value() != 8 {
		t.Fatalf("node status update = %+v", status)
	}
}

func TestVolumeStrategiesResetStatus(t *testing.T) {
	ctx := context.Background()
	pv := makePV()
	pv.Status.Phase = corev1.VolumeBound
	resourceByPlural(t, "persistentvolumes").Strategy.PrepareForCreate(ctx, pv)
	if pv.Status.Phase != corev1.VolumePending {
		t.Fatalf("pv phase = %s", pv.Status.Phase)
	}
	pvc := makePVC()
	pvc.Status.Phase = corev1.ClaimBound
	resourceByPlural(t, "persistentvolumeclaims").Strategy.PrepareForCreate(ctx, pvc)
	if pvc.Status.Phase != corev1.ClaimPending {
		t.Fatalf("pvc phase = %s", pvc.Status.Phase)
	}
}

// Namespace /status may change labels and annotations besides the status (upstream only restores
// the spec); the conformance spec "Namespaces should apply changes to a namespace status" patches
// an annotation through /status.
func TestStatusMetadataChanges(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	upd := ns.DeepCopy()
	upd.Annotations = map[string]string{"e2e-patched-ns-status": "a"}
	upd.Spec.Finalizers = nil
	upd.Status.Conditions = []corev1.NamespaceCondition{{Type: "StatusPatch", Status: corev1.ConditionTrue, Reason: "E2E"}}
	resourceByPlural(t, "namespaces").Status.PrepareForUpdate(ctx, upd, ns)
	if upd.Annotations["e2e-patched-ns-status"] != "a" || len(upd.Status.Conditions) != 1 || len(upd.Spec.Finalizers) != 1 {
		t.Errorf("namespace /status: annotations %v, conditions %v, finalizers %v", upd.Annotations, upd.Status.Conditions, upd.Spec.Finalizers)
	}

}
