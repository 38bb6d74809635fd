package core

//lint:file-ignore SA1019 core/v1 Endpoints are deprecated, not removed: Kubernetes still serves them and so does skiff.

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestRegisterDefaultsRejectsNilScheme(t *testing.T) {
	if err := RegisterDefaults(nil); err == nil {
		t.Fatal("want an error for a nil scheme")
	}
}

func TestPodDefaultsThroughScheme(t *testing.T) {
	s := newDefaultingScheme(t)
	pod := makePod("web").with(func(p *corev1.Pod) {
		c := &p.Spec.Containers[0]
		c.Ports = []corev1.ContainerPort{{ContainerPort: 80}}
		c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}}
		c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}}
		c.Env = []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
		c.Resources.Limits = corev1.ResourceList{"cpu": qty("500m"), "memory": qty("128Mi")}
		p.Spec.Volumes = []corev1.Volume{
			{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
			{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec"}}},
			{Name: "scratch"},
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}},
			{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}},
		}
	}).raw()
	s.Default(pod)

	spec := pod.Spec
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"restartPolicy", spec.RestartPolicy, corev1.RestartPolicyAlways},
		{"dnsPolicy", spec.DNSPolicy, corev1.DNSClusterFirst},
		{"terminationGracePeriodSeconds", *spec.TerminationGracePeriodSeconds, int64(30)},
		{"schedulerName", spec.SchedulerName, "default-scheduler"},
		{"securityContext", *spec.SecurityContext, corev1.PodSecurityContext{}},
		{"enableServiceLinks", *spec.EnableServiceLinks, true},
		{"terminationMessagePath", spec.Containers[0].TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", spec.Containers[0].TerminationMessagePolicy, corev1.TerminationMessageReadFile},
		{"imagePullPolicy", spec.Containers[0].ImagePullPolicy, corev1.PullIfNotPresent},
		{"port protocol", spec.Containers[0].Ports[0].Protocol, corev1.ProtocolTCP},
		{"probe timeout", spec.Containers[0].LivenessProbe.TimeoutSeconds, int32(1)},
		{"probe period", spec.Containers[0].LivenessProbe.PeriodSeconds, int32(10)},
		{"probe success", spec.Containers[0].LivenessProbe.SuccessThreshold, int32(1)},
		{"probe failure", spec.Containers[0].LivenessProbe.FailureThreshold, int32(3)},
		{"httpGet scheme", spec.Containers[0].LivenessProbe.HTTPGet.Scheme, corev1.URISchemeHTTP},
		{"httpGet path", spec.Containers[0].LivenessProbe.HTTPGet.Path, "/"},
		{"grpc service", *spec.Containers[0].ReadinessProbe.GRPC.Service, ""},
		{"fieldRef apiVersion", spec.Containers[0].Env[0].ValueFrom.FieldRef.APIVersion, "v1"},
		{"configMap defaultMode", *spec.Volumes[0].ConfigMap.DefaultMode, int32(420)},
		{"secret defaultMode", *spec.Volumes[1].Secret.DefaultMode, int32(420)},
		{"emptyDir", *spec.Volumes[2].EmptyDir, corev1.EmptyDirVolumeSource{}},
		{"hostPath type", *spec.Volumes[3].HostPath.Type, corev1.HostPathUnset},
		{"projected defaultMode", *spec.Volumes[4].Projected.DefaultMode, int32(420)},
		{"token expiration", *spec.Volumes[4].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds, int64(3600)},
	}
	for _, c := range checks {
		if !equality.Semantic.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	req := spec.Containers[0].Resources.Requests
	if req.Cpu().String() != "500m" || req.Memory().String() != "128Mi" {
		t.Errorf("requests = %v, want them taken from limits", req)
	}
	if spec.Priority != nil || spec.PreemptionPolicy != nil || len(spec.Tolerations) != 0 {
		t.Errorf("priority, preemption and tolerations are admission's job, got %v %v %v", spec.Priority, spec.PreemptionPolicy, spec.Tolerations)
	}
}

// TestNegativeGracePeriodIsOne: a pod's negative terminationGracePeriodSeconds reads as 1, as
// Kubernetes' pod conversion makes it (the upstream spec "Pod TerminationGracePeriodSeconds is
// negative" creates and updates a pod with -1 and expects 1 back); a template keeps its value,
// and zero or a positive period stays.
func TestNegativeGracePeriodIsOne(t *testing.T) {
	s := newDefaultingScheme(t)
	for _, tc := range []struct{ in, want int64 }{{-1, 1}, {-30, 1}, {0, 0}, {5, 5}} {
		pod := makePod("web").with(func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = &tc.in }).raw()
		s.Default(pod)
		if got := *pod.Spec.TerminationGracePeriodSeconds; got != tc.want {
			t.Errorf("pod with %d: terminationGracePeriodSeconds = %d, want %d", tc.in, got, tc.want)
		}
	}
	negative := int64(-1)
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "busybox"}}, TerminationGracePeriodSeconds: &negative}}
	DefaultPodTemplateSpec(tmpl)
	if *tmpl.Spec.TerminationGracePeriodSeconds != -1 {
		t.Errorf("a template's negative period became %d", *tmpl.Spec.TerminationGracePeriodSeconds)
	}
}

func TestPodTemplateDefaultsLeaveServiceLinksUnset(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "busybox"}}}}
	DefaultPodTemplateSpec(tmpl)
	if tmpl.Spec.EnableServiceLinks != nil {
		t.Error("enableServiceLinks is a pod default, not a template default")
	}
	if tmpl.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("restartPolicy = %q", tmpl.Spec.RestartPolicy)
	}
}

// TestDeprecatedServiceAccountIsAnAlias: serviceAccount names the service account when
// serviceAccountName is empty, and always reads back as serviceAccountName, as Kubernetes' v1
// conversion makes it for every pod spec (pods and workloads' templates). The volumesnapshots
// addon's StatefulSet names its account only by serviceAccount; its pod ran as "default".
func TestDeprecatedServiceAccountIsAnAlias(t *testing.T) {
	for _, tc := range []struct {
		name, saName, deprecated string
		want                     string
	}{
		{"only the deprecated field", "", "snapshotter", "snapshotter"},
		{"only serviceAccountName", "builder", "", "builder"},
		{"both: serviceAccountName wins", "builder", "old", "builder"},
		{"neither", "", "", ""},
	} {
		tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{ServiceAccountName: tc.saName, DeprecatedServiceAccount: tc.deprecated}}
		DefaultPodTemplateSpec(tmpl)
		if tmpl.Spec.ServiceAccountName != tc.want || tmpl.Spec.DeprecatedServiceAccount != tc.want {
			t.Errorf("%s: serviceAccountName %q, serviceAccount %q, want both %q", tc.name, tmpl.Spec.ServiceAccountName, tmpl.Spec.DeprecatedServiceAccount, tc.want)
		}
		pod := &corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: tc.saName, DeprecatedServiceAccount: tc.deprecated}}
		DefaultPod(pod)
		if pod.Spec.ServiceAccountName != tc.want || pod.Spec.DeprecatedServiceAccount != tc.want {
			t.Errorf("%s (pod): serviceAccountName %q, serviceAccount %q, want both %q", tc.name, pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount, tc.want)
		}
	}
}

func TestImagePullPolicyDefault(t *testing.T) {
	cases := map[string]corev1.PullPolicy{
		"nginx":                                  corev1.PullAlways,
		"nginx:latest":                           corev1.PullAlways,
		"nginx:1.27":                             corev1.PullIfNotPresent,
		"registry:5000/team/app":                 corev1.PullAlways,
		"registry:5000/team/app:v2":              corev1.PullIfNotPresent,
		"nginx@sha256:" + sha256Hex:              corev1.PullIfNotPresent,
		"nginx:latest@sha256:" + sha256Hex:       corev1.PullAlways,
		"localhost:5000/app@sha256:" + sha256Hex: corev1.PullIfNotPresent,
	}
	for image, want := range cases {
		c := corev1.Container{Name: "a", Image: image}
		defaultContainer(&c, false)
		if c.ImagePullPolicy != want {
			t.Errorf("%s: imagePullPolicy = %s, want %s", image, c.ImagePullPolicy, want)
		}
	}
}

const sha256Hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestHostNetworkPortsDefaultHostPort(t *testing.T) {
	pod := makePod("hn").with(func(p *corev1.Pod) {
		p.Spec.HostNetwork = true
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
	}).obj()
	if got := pod.Spec.Containers[0].Ports[0].HostPort; got != 8080 {
		t.Fatalf("hostPort = %d, want 8080", got)
	}
}

func TestServiceDefaults(t *testing.T) {
	s := newDefaultingScheme(t)
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}, {Port: 443, TargetPort: intstr.FromString("https")}}}}
	s.Default(svc)
	if svc.Spec.SessionAffinity != corev1.ServiceAffinityNone || svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("sessionAffinity=%q type=%q", svc.Spec.SessionAffinity, svc.Spec.Type)
	}
	if svc.Spec.Ports[0].Protocol != corev1.ProtocolTCP || svc.Spec.Ports[0].TargetPort != intstr.FromInt32(80) {
		t.Errorf("port 0 = %+v", svc.Spec.Ports[0])
	}
	if svc.Spec.Ports[1].TargetPort != intstr.FromString("https") {
		t.Errorf("a named targetPort must be kept, got %v", svc.Spec.Ports[1].TargetPort)
	}
	if *svc.Spec.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyCluster || *svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
		t.Errorf("internalTrafficPolicy=%v ipFamilyPolicy=%v", *svc.Spec.InternalTrafficPolicy, *svc.Spec.IPFamilyPolicy)
	}
	if svc.Spec.ExternalTrafficPolicy != "" || svc.Spec.AllocateLoadBalancerNodePorts != nil {
		t.Error("ClusterIP services get no external traffic policy or node port allocation flag")
	}

	lb := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, SessionAffinity: corev1.ServiceAffinityClientIP}}
	s.Default(lb)
	if lb.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster || !*lb.Spec.AllocateLoadBalancerNodePorts {
		t.Errorf("load balancer defaults: %+v", lb.Spec)
	}
	if *lb.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds != 10800 {
		t.Errorf("ClientIP timeout = %d", *lb.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds)
	}

	// Switching affinity off (an update that sets only None) drops the ClientIP settings.
	lb.Spec.SessionAffinity = corev1.ServiceAffinityNone
	s.Default(lb)
	if lb.Spec.SessionAffinityConfig != nil {
		t.Errorf("sessionAffinity None kept sessionAffinityConfig %+v", lb.Spec.SessionAffinityConfig)
	}

	ext := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}}
	s.Default(ext)
	if ext.Spec.InternalTrafficPolicy != nil || ext.Spec.IPFamilyPolicy != nil {
		t.Error("ExternalName services get no traffic or IP family policy")
	}
}

func TestOtherDefaults(t *testing.T) {
	s := newDefaultingScheme(t)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	s.Default(ns)
	if ns.Status.Phase != corev1.NamespaceActive || ns.Labels[corev1.LabelMetadataName] != "team" {
		t.Errorf("namespace = %+v", ns)
	}

	secret := &corev1.Secret{StringData: map[string]string{"password": "hunter2"}}
	s.Default(secret)
	if secret.Type != corev1.SecretTypeOpaque || string(secret.Data["password"]) != "hunter2" || secret.StringData != nil {
		t.Errorf("secret = %+v", secret)
	}

	pv := &corev1.PersistentVolume{}
	s.Default(pv)
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || *pv.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || pv.Status.Phase != corev1.VolumePending {
		t.Errorf("pv = %+v", pv)
	}

	pvc := &corev1.PersistentVolumeClaim{}
	s.Default(pvc)
	if *pvc.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || pvc.Status.Phase != corev1.ClaimPending {
		t.Errorf("pvc = %+v", pvc)
	}

	node := &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{"cpu": qty("4")}}}
	s.Default(node)
	if node.Status.Allocatable.Cpu().String() != "4" {
		t.Errorf("allocatable = %v", node.Status.Allocatable)
	}

	ep := &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 80}}}}}
	s.Default(ep)
	if ep.Subsets[0].Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("endpoint port protocol = %q", ep.Subsets[0].Ports[0].Protocol)
	}

	lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer,
		Max:  corev1.ResourceList{"cpu": qty("2")},
		Min:  corev1.ResourceList{"memory": qty("64Mi")},
	}}}}
	s.Default(lr)
	item := lr.Spec.Limits[0]
	if item.Default.Cpu().String() != "2" || item.DefaultRequest.Cpu().String() != "2" || item.DefaultRequest.Memory().String() != "64Mi" {
		t.Errorf("limit range item = %+v", item)
	}

	sa := &corev1.ServiceAccount{}
	s.Default(sa)
	if sa.AutomountServiceAccountToken != nil {
		t.Error("service accounts have no defaults")
	}
}

func TestResourceQuantitiesRoundUpToMilli(t *testing.T) {
	pod := makePod("round").resources(corev1.ResourceList{"cpu": qty("0.0001")}, nil).obj()
	if got := pod.Spec.Containers[0].Resources.Limits.Cpu().String(); got != "1m" {
		t.Fatalf("cpu limit = %s, want 1m", got)
	}
}

func TestPodStatusIPsFollowTheSingularFields(t *testing.T) {
	tests := []struct {
		name string
		in   corev1.PodStatus
		want corev1.PodStatus
	}{
		{"podIP alone fills podIPs",
			corev1.PodStatus{PodIP: "10.42.0.5", HostIP: "192.0.2.1"},
			corev1.PodStatus{PodIP: "10.42.0.5", PodIPs: []corev1.PodIP{{IP: "10.42.0.5"}}, HostIP: "192.0.2.1", HostIPs: []corev1.HostIP{{IP: "192.0.2.1"}}}},
		{"lists alone fill the singular fields",
			corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "10.42.0.5"}, {IP: "fd00::5"}}, HostIPs: []corev1.HostIP{{IP: "192.0.2.1"}}},
			corev1.PodStatus{PodIP: "10.42.0.5", PodIPs: []corev1.PodIP{{IP: "10.42.0.5"}, {IP: "fd00::5"}}, HostIP: "192.0.2.1", HostIPs: []corev1.HostIP{{IP: "192.0.2.1"}}}},
		{"agreeing dual-stack lists are kept",
			corev1.PodStatus{PodIP: "10.42.0.5", PodIPs: []corev1.PodIP{{IP: "10.42.0.5"}, {IP: "fd00::5"}}},
			corev1.PodStatus{PodIP: "10.42.0.5", PodIPs: []corev1.PodIP{{IP: "10.42.0.5"}, {IP: "fd00::5"}}}},
		{"a disagreeing singular field wins",
			corev1.PodStatus{PodIP: "10.42.0.9", PodIPs: []corev1.PodIP{{IP: "10.42.0.5"}}, HostIP: "192.0.2.9", HostIPs: []corev1.HostIP{{IP: "192.0.2.1"}}},
			corev1.PodStatus{PodIP: "10.42.0.9", PodIPs: []corev1.PodIP{{IP: "10.42.0.9"}}, HostIP: "192.0.2.9", HostIPs: []corev1.HostIP{{IP: "192.0.2.9"}}}},
		{"no addresses", corev1.PodStatus{}, corev1.PodStatus{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Status: tt.in}
			DefaultPod(pod)
			if !equality.Semantic.DeepEqual(pod.Status, tt.want) {
				t.Errorf("status = %+v, want %+v", pod.Status, tt.want)
			}
		})
	}
}
