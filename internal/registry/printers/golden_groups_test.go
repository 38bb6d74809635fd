package printers

import (
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// groupGoldenCases are the tables of the groups served since issue 11 (storage, node, networking,
// flowcontrol, autoscaling and the later core resources).
func groupGoldenCases() []goldenCase {
	core := func(r string) schema.GroupResource { return schema.GroupResource{Resource: r} }
	group := func(g, r string) schema.GroupResource { return schema.GroupResource{Group: g, Resource: r} }
	return []goldenCase{
		{"podtemplates", core("podtemplates"), goldenPodTemplates()},
		{"componentstatuses", core("componentstatuses"), goldenComponentStatuses()},
		{"storageclasses.storage.k8s.io", group("storage.k8s.io", "storageclasses"), goldenStorageClasses()},
		{"csidrivers.storage.k8s.io", group("storage.k8s.io", "csidrivers"), goldenCSIDrivers()},
		{"csinodes.storage.k8s.io", group("storage.k8s.io", "csinodes"), goldenCSINodes()},
		{"csistoragecapacities.storage.k8s.io", group("storage.k8s.io", "csistoragecapacities"), goldenCSIStorageCapacities()},
		{"volumeattachments.storage.k8s.io", group("storage.k8s.io", "volumeattachments"), goldenVolumeAttachments()},
		{"runtimeclasses.node.k8s.io", group("node.k8s.io", "runtimeclasses"), goldenRuntimeClasses()},
		{"ingresses.networking.k8s.io", group("networking.k8s.io", "ingresses"), goldenIngresses()},
		{"ingressclasses.networking.k8s.io", group("networking.k8s.io", "ingressclasses"), goldenIngressClasses()},
		{"networkpolicies.networking.k8s.io", group("networking.k8s.io", "networkpolicies"), goldenNetworkPolicies()},
		{"flowschemas.flowcontrol.apiserver.k8s.io", group("flowcontrol.apiserver.k8s.io", "flowschemas"), goldenFlowSchemas()},
		{"prioritylevelconfigurations.flowcontrol.apiserver.k8s.io", group("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"), goldenPriorityLevels()},
		{"horizontalpodautoscalers.autoscaling", group("autoscaling", "horizontalpodautoscalers"), goldenHPAs()},
	}
}

func goldenStorageClasses() []runtime.Object {
	return []runtime.Object{
		&storagev1.StorageClass{
			ObjectMeta:  metav1.ObjectMeta{Name: "local-path", CreationTimestamp: ago(40 * 24 * time.Hour), Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
			Provisioner: "rancher.io/local-path", ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete),
			VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		},
		&storagev1.StorageClass{
			ObjectMeta:  metav1.ObjectMeta{Name: "gp3-retain", CreationTimestamp: ago(2 * time.Hour)},
			Provisioner: "ebs.csi.aws.com", ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimRetain),
			VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate), AllowVolumeExpansion: ptr.To(true),
		},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "undefaulted", CreationTimestamp: ago(time.Minute)}, Provisioner: "example.com/nfs"},
	}
}

func goldenCSIDrivers() []runtime.Object {
	return []runtime.Object{
		&storagev1.CSIDriver{
			ObjectMeta: metav1.ObjectMeta{Name: "ebs.csi.aws.com", CreationTimestamp: ago(10 * 24 * time.Hour)},
			Spec: storagev1.CSIDriverSpec{
				AttachRequired: ptr.To(true), PodInfoOnMount: ptr.To(false), StorageCapacity: ptr.To(false), RequiresRepublish: ptr.To(false),
				VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
			},
		},
		&storagev1.CSIDriver{
			ObjectMeta: metav1.ObjectMeta{Name: "secrets-store.csi.k8s.io", CreationTimestamp: ago(3 * time.Hour)},
			Spec: storagev1.CSIDriverSpec{
				AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(true), StorageCapacity: ptr.To(true), RequiresRepublish: ptr.To(true),
				TokenRequests:        []storagev1.TokenRequest{{Audience: "api://vault"}, {Audience: ""}},
				VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral},
			},
		},
		&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "undefaulted.example.com", CreationTimestamp: ago(time.Minute)}},
	}
}

func goldenCSINodes() []runtime.Object {
	return []runtime.Object{
		&storagev1.CSINode{
			ObjectMeta: metav1.ObjectMeta{Name: "worker-1", CreationTimestamp: ago(5 * 24 * time.Hour)},
			Spec:       storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "ebs.csi.aws.com", NodeID: "i-1"}, {Name: "efs.csi.aws.com", NodeID: "i-1"}}},
		},
		&storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "worker-2", CreationTimestamp: ago(time.Hour)}},
	}
}

func goldenCSIStorageCapacities() []runtime.Object {
	return []runtime.Object{
		&storagev1.CSIStorageCapacity{
			ObjectMeta:       metav1.ObjectMeta{Name: "csisc-7x2kq", Namespace: "kube-system", CreationTimestamp: ago(time.Hour)},
			StorageClassName: "local-lvm", Capacity: ptr.To(resource.MustParse("512Gi")),
		},
		&storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: "csisc-unset", Namespace: "kube-system"}, StorageClassName: "local-lvm"},
	}
}

func goldenVolumeAttachments() []runtime.Object {
	return []runtime.Object{
		&storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: "csi-3b1f0c9e", CreationTimestamp: ago(20 * time.Minute)},
			Spec: storagev1.VolumeAttachmentSpec{
				Attacher: "ebs.csi.aws.com", NodeName: "worker-1",
				Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pvc-8d2f")},
			},
			Status: storagev1.VolumeAttachmentStatus{Attached: true},
		},
		&storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: "csi-inline", CreationTimestamp: ago(30 * time.Second)},
			Spec: storagev1.VolumeAttachmentSpec{
				Attacher: "ebs.csi.aws.com", NodeName: "worker-2",
				Source: storagev1.VolumeAttachmentSource{InlineVolumeSpec: &corev1.PersistentVolumeSpec{}},
			},
		},
	}
}

func goldenRuntimeClasses() []runtime.Object {
	return []runtime.Object{
		&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor", CreationTimestamp: ago(8 * 24 * time.Hour)}, Handler: "runsc"},
		&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "kata", CreationTimestamp: ago(90 * time.Second)}, Handler: "kata-qemu"},
	}
}

func goldenIngresses() []runtime.Object {
	rule := func(host string) networkingv1.IngressRule { return networkingv1.IngressRule{Host: host} }
	return []runtime.Object{
		&networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default", CreationTimestamp: ago(6 * 24 * time.Hour)},
			Spec: networkingv1.IngressSpec{
				IngressClassName: ptr.To("nginx"),
				Rules:            []networkingv1.IngressRule{rule("shop.example.com"), rule("www.shop.example.com")},
				TLS:              []networkingv1.IngressTLS{{Hosts: []string{"shop.example.com"}, SecretName: "shop-tls"}},
			},
			Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{
				{IP: "203.0.113.10"}, {IP: "198.51.100.7"}, {Hostname: "lb-123.elb.example.com"}, {IP: "203.0.113.10"},
			}}},
		},
		&networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Name: "many-hosts", Namespace: "default", CreationTimestamp: ago(5 * time.Minute)},
			Spec:       networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{rule("a.example.com"), rule(""), rule("b.example.com"), rule("c.example.com"), rule("d.example.com")}},
		},
		&networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Name: "catch-all", Namespace: "default", CreationTimestamp: ago(40 * time.Second)},
			Spec:       networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}},
		},
	}
}

func goldenIngressClasses() []runtime.Object {
	return []runtime.Object{
		&networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx", CreationTimestamp: ago(30 * 24 * time.Hour)}, Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}},
		&networkingv1.IngressClass{
			ObjectMeta: metav1.ObjectMeta{Name: "external-lb", CreationTimestamp: ago(2 * time.Hour)},
			Spec: networkingv1.IngressClassSpec{Controller: "example.com/ingress-controller", Parameters: &networkingv1.IngressClassParametersReference{
				APIGroup: ptr.To("k8s.example.com"), Kind: "IngressParameters", Name: "external-lb", Scope: ptr.To("Cluster"),
			}},
		},
		&networkingv1.IngressClass{
			ObjectMeta: metav1.ObjectMeta{Name: "core-params", CreationTimestamp: ago(time.Minute)},
			Spec:       networkingv1.IngressClassSpec{Controller: "example.com/other", Parameters: &networkingv1.IngressClassParametersReference{Kind: "ConfigMap", Name: "params"}},
		},
	}
}

func goldenNetworkPolicies() []runtime.Object {
	return []runtime.Object{
		&networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "allow-web", Namespace: "default", CreationTimestamp: ago(3 * time.Hour)},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{
				MatchLabels:      map[string]string{"app": "web"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"frontend", "edge"}}},
			}},
		},
		&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "default-deny", Namespace: "default", CreationTimestamp: ago(10 * 24 * time.Hour)}},
	}
}

func goldenPodTemplates() []runtime.Object {
	tmpl := podTemplate("web", "sidecar")
	tmpl.Labels = map[string]string{"app": "web", "tier": "frontend"}
	return []runtime.Object{
		&corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web-template", Namespace: "default", CreationTimestamp: ago(time.Hour)}, Template: tmpl},
		&corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "default"}, Template: podTemplate("app")},
	}
}

func goldenComponentStatuses() []runtime.Object {
	healthy := func(name, msg string) *corev1.ComponentStatus {
		return &corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: name}, Conditions: []corev1.ComponentCondition{{Type: corev1.ComponentHealthy, Status: corev1.ConditionTrue, Message: msg}}}
	}
	return []runtime.Object{
		healthy("scheduler", "ok"),
		&corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: "controller-manager"}, Conditions: []corev1.ComponentCondition{{
			Type: corev1.ComponentHealthy, Status: corev1.ConditionFalse, Error: "no instance holds the leader lease",
		}}},
		healthy("etcd-0", "ok"),
		&corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: "no-conditions"}},
	}
}

func goldenFlowSchemas() []runtime.Object {
	fs := func(name, level string, precedence int32, method flowcontrolv1.FlowDistinguisherMethodType, dangling flowcontrolv1.ConditionStatus) *flowcontrolv1.FlowSchema {
		obj := &flowcontrolv1.FlowSchema{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: ago(37 * time.Hour)},
			Spec:       flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level}, MatchingPrecedence: precedence},
		}
		if method != "" {
			obj.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: method}
		}
		if dangling != "" {
			obj.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: dangling}}
		}
		return obj
	}
	return []runtime.Object{
		fs("exempt", "exempt", 1, "", flowcontrolv1.ConditionFalse),
		fs("kube-scheduler", "workload-high", 800, flowcontrolv1.FlowDistinguisherMethodByNamespaceType, flowcontrolv1.ConditionFalse),
		fs("team-a", "team-a-level", 5000, flowcontrolv1.FlowDistinguisherMethodByUserType, flowcontrolv1.ConditionTrue),
		fs("fresh", "global-default", 9000, flowcontrolv1.FlowDistinguisherMethodByUserType, ""),
	}
}

func goldenPriorityLevels() []runtime.Object {
	return []runtime.Object{
		&flowcontrolv1.PriorityLevelConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "catch-all", CreationTimestamp: ago(37 * time.Hour)},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](5), LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			}},
		},
		&flowcontrolv1.PriorityLevelConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "exempt", CreationTimestamp: ago(37 * time.Hour)},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt, Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](0),
			}},
		},
		&flowcontrolv1.PriorityLevelConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "leader-election", CreationTimestamp: ago(37 * time.Hour)},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](10),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{
					Queues: 16, HandSize: 4, QueueLengthLimit: 50,
				}},
			}},
		},
	}
}

func goldenHPAs() []runtime.Object {
	ref := autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	cpu := func(pct int32) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(pct)},
		}}
	}
	memory := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("500Mi"))},
	}}
	pods := autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "requests_per_second"},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("1k"))},
	}}
	external := autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "queue_depth"},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr.To(resource.MustParse("30"))},
	}}
	return []runtime.Object{
		&autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: ago(2 * 24 * time.Hour)},
			Spec:       autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: ref, MinReplicas: ptr.To[int32](2), MaxReplicas: 10, Metrics: []autoscalingv2.MetricSpec{cpu(80)}},
			Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 3, CurrentMetrics: []autoscalingv2.MetricStatus{{
				Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To[int32](45)}},
			}}},
		},
		&autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "default", CreationTimestamp: ago(10 * time.Minute)},
			Spec:       autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: ref, MaxReplicas: 20, Metrics: []autoscalingv2.MetricSpec{memory, pods, external}},
		},
		&autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "no-metrics", Namespace: "default", CreationTimestamp: ago(time.Minute)},
			Spec:       autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: ref, MinReplicas: ptr.To[int32](1), MaxReplicas: 3},
		},
		&autoscalingv1.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: "default", CreationTimestamp: ago(5 * time.Hour)},
			Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: "StatefulSet", Name: "db"},
				MinReplicas:    ptr.To[int32](1), MaxReplicas: 4, TargetCPUUtilizationPercentage: ptr.To[int32](60),
			},
			Status: autoscalingv1.HorizontalPodAutoscalerStatus{CurrentReplicas: 1, CurrentCPUUtilizationPercentage: ptr.To[int32](12)},
		},
	}
}
