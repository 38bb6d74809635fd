package quota

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func rl(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestUsage(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "2")}}},
		Containers: []corev1.Container{
			{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "500m", "memory", "1Gi"), Limits: rl("memory", "2Gi")}},
			{Name: "b", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "250m")}},
		},
		Overhead: rl("cpu", "100m"),
	}}
	done := pod.DeepCopy()
	done.Status.Phase = corev1.PodFailed
	gold := "gold"
	tests := []struct {
		name string
		gr   schema.GroupResource
		obj  runtime.Object
		want string
	}{
		{"pod: the larger of init and sum, plus overhead", schema.GroupResource{Resource: "pods"}, pod,
			"count/pods=1,cpu=2100m,limits.memory=2Gi,memory=1Gi,pods=1,requests.cpu=2100m,requests.memory=1Gi"},
		{"a terminated pod holds nothing", schema.GroupResource{Resource: "pods"}, done, ""},
		{"claim with a class", schema.GroupResource{Resource: "persistentvolumeclaims"}, &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &gold, Resources: corev1.VolumeResourceRequirements{Requests: rl("storage", "5Gi")}}},
			"count/persistentvolumeclaims=1,gold.storageclass.storage.k8s.io/persistentvolumeclaims=1,gold.storageclass.storage.k8s.io/requests.storage=5Gi,persistentvolumeclaims=1,requests.storage=5Gi"},
		{"load balancer", schema.GroupResource{Resource: "services"}, &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080}, {Port: 443, NodePort: 30443}}}},
			"count/services=1,services=1,services.loadbalancers=1,services.nodeports=2"},
		{"load balancer before its node ports are allocated", schema.GroupResource{Resource: "services"}, &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Port: 80}}}},
			"count/services=1,services=1,services.loadbalancers=1,services.nodeports=1"},
		{"load balancer without node ports", schema.GroupResource{Resource: "services"}, &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			AllocateLoadBalancerNodePorts: ptr.To(false), Ports: []corev1.ServicePort{{Port: 80}}}},
			"count/services=1,services=1,services.loadbalancers=1,services.nodeports=0"},
		{"node port service before allocation", schema.GroupResource{Resource: "services"}, &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort,
			Ports: []corev1.ServicePort{{Port: 80}, {Port: 81}}}},
			"count/services=1,services=1,services.nodeports=2"},
		{"other kinds: count/<resource>.<group>", schema.GroupResource{Group: "apps", Resource: "deployments"}, &corev1.ConfigMap{}, "count/deployments.apps=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PrettyPrint(Usage(tt.gr, tt.obj)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	podsGR := schema.GroupResource{Resource: "pods"}
	high := &corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "high", Containers: []corev1.Container{{Name: "c"}}}}
	deadline := &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: ptr.To[int64](5), Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1")}}}}}
	q := func(scopes []corev1.ResourceQuotaScope, sel ...corev1.ScopedResourceSelectorRequirement) *corev1.ResourceQuota {
		r := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Scopes: scopes}}
		if len(sel) > 0 {
			r.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: sel}
		}
		return r
	}
	in := corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}
	withAffinity := func(a *corev1.Affinity) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Affinity: a, Containers: []corev1.Container{{Name: "c"}}}}
	}
	term := func(namespaces []string, sel *metav1.LabelSelector) corev1.PodAffinityTerm {
		return corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", Namespaces: namespaces, NamespaceSelector: sel}
	}
	crossNS := corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopeCrossNamespacePodAffinity, Operator: corev1.ScopeSelectorOpExists}
	namedNS := withAffinity(&corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term([]string{"other"}, nil)}}})
	anyNS := withAffinity(&corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term(nil, &metav1.LabelSelector{})}}}})
	ownNS := withAffinity(&corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nil, nil)}}})
	tests := []struct {
		name  string
		quota *corev1.ResourceQuota
		gr    schema.GroupResource
		obj   runtime.Object
		want  bool
	}{
		{"no scope covers anything", q(nil), schema.GroupResource{Resource: "configmaps"}, &corev1.ConfigMap{}, true},
		{"a scoped quota covers pods only", q([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}), schema.GroupResource{Resource: "configmaps"}, &corev1.ConfigMap{}, false},
		{"priority class In", q(nil, in), podsGR, high, true},
		{"priority class In, other class", q(nil, in), podsGR, deadline, false},
		{"Terminating and NotBestEffort", q([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotBestEffort}), podsGR, deadline, true},
		{"BestEffort", q([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}), podsGR, deadline, false},
		{"cross-namespace affinity by namespaces", q(nil, crossNS), podsGR, namedNS, true},
		{"cross-namespace anti-affinity by an empty selector (preferred)", q([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeCrossNamespacePodAffinity}), podsGR, anyNS, true},
		{"affinity in the pod's own namespace", q(nil, crossNS), podsGR, ownNS, false},
		{"no affinity", q(nil, crossNS), podsGR, high, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Matches(tt.quota, tt.gr, tt.obj); got != tt.want {
				t.Errorf("Matches = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestConstraints(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1"), Limits: rl("cpu", "1")}},
		{Name: "b"},
	}}}
	if err := Constraints(rl("pods", "1", "requests.storage", "1Gi"), p); err != nil {
		t.Errorf("no compute quota: %v", err)
	}
	err := Constraints(rl("limits.cpu", "4", "memory", "1Gi"), p)
	if err == nil || err.Error() != "must specify limits.cpu for: b; memory for: a,b" {
		t.Errorf("got %v", err)
	}
}

func TestPodRequestsAndLimits(t *testing.T) {
	running := func(specReq, specLim, applied, allocated string, infeasible bool) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: rl("cpu", specReq), Limits: rl("cpu", specLim)}}}}}
		if applied != "" {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", AllocatedResources: rl("cpu", allocated),
				Resources: &corev1.ResourceRequirements{Requests: rl("cpu", applied), Limits: rl("cpu", applied)}}}
		}
		if infeasible {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible}}
		}
		return p
	}
	sidecar := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: corev1.ResourceRequirements{Requests: rl("cpu", "100m")}},
			{Name: "init", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "250m"), Limits: rl("memory", "1Gi")}},
		},
		Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "200m"), Limits: rl("cpu", "0")}}},
		Overhead:   rl("cpu", "10m", "memory", "1Mi"),
	}}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"not running: the spec", running("400m", "400m", "", "", false), "cpu=400m,limits.cpu=400m,requests.cpu=400m"},
		{"a grow in flight: the spec", running("400m", "400m", "300m", "300m", false), "cpu=400m,limits.cpu=400m,requests.cpu=400m"},
		{"a shrink in flight: what the node applied", running("200m", "200m", "300m", "300m", false), "cpu=300m,limits.cpu=300m,requests.cpu=300m"},
		{"allocated but not yet applied", running("200m", "200m", "100m", "300m", false), "cpu=300m,limits.cpu=200m,requests.cpu=300m"},
		{"an infeasible resize: what the node holds", running("800m", "800m", "300m", "300m", true), "cpu=300m,limits.cpu=300m,requests.cpu=300m"},
		// max(200m + 100m sidecar, 250m init + 100m sidecar) + 10m overhead; all of the overhead
		// is requested, none added to a zero limit; the init container's memory limit is the pod's.
		{"sidecars and overhead", sidecar, "cpu=360m,limits.cpu=0,limits.memory=1025Mi,memory=1Mi,requests.cpu=360m,requests.memory=1Mi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PrettyPrint(PodCompute(tt.pod)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
