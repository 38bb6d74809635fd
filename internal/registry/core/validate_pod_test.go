package core

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidatePodAcceptsValidPods(t *testing.T) {
	cases := map[string]*corev1.Pod{
		"minimal": makePod("web").obj(),
		"full": makePod("full").with(func(p *corev1.Pod) {
			c := &p.Spec.Containers[0]
			c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 80}, {Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}}
			c.Env = []corev1.EnvVar{{Name: "MODE", Value: "prod"}, {Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}
			c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "cfg", MountPath: "/etc/app", SubPath: "app"}}
			c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}}
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}, SuccessThreshold: 2}
			c.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": qty("100m")}, Limits: corev1.ResourceList{"cpu": qty("1"), "memory": qty("1Gi")}}
			p.Spec.Volumes = []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: []corev1.KeyToPath{{Key: "a", Path: "a.conf"}}}}},
			}
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", Command: []string{"true"}}}
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoSchedule}, {Operator: corev1.TolerationOpExists}}
			p.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}}
		}).obj(),
		"sysctls": makePod("sysctls").with(func(p *corev1.Pod) {
			p.Spec.HostIPC = true
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{
				{Name: "net.ipv4.ip_local_port_range", Value: "1024 65535"}, {Name: "net/ipv4/conf/eth0.100/rp_filter", Value: "1"}, {Name: "kernel.unknown_but_valid", Value: "1"},
			}}
		}).obj(),
		"sidecar": makePod("sidecar").with(func(p *corev1.Pod) {
			always := corev1.ContainerRestartPolicyAlways
			p.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "envoy", RestartPolicy: &always,
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}}}
		}).obj(),
	}
	for name, pod := range cases {
		t.Run(name, func(t *testing.T) { requireNoErrors(t, ValidatePod(pod)) })
	}
}

func TestValidatePodRejects(t *testing.T) {
	cases := []struct {
		name   string
		pod    *corev1.Pod
		want   wantErr
		noDflt bool
	}{
		{"bad name", makePod("Web_1").obj(), wantErr{"metadata.name", field.ErrorTypeInvalid, "a lowercase RFC 1123 subdomain"}, false},
		{"missing namespace", makePod("web").with(func(p *corev1.Pod) { p.Namespace = "" }).obj(), wantErr{"metadata.namespace", field.ErrorTypeRequired, ""}, false},
		{"no containers", makePod("web").with(func(p *corev1.Pod) { p.Spec.Containers = nil }).obj(), wantErr{"spec.containers", field.ErrorTypeRequired, ""}, false},
		{"container name missing", makePod("web").with(func(p *corev1.Pod) { p.Spec.Containers[0].Name = "" }).obj(), wantErr{"spec.containers[0].name", field.ErrorTypeRequired, ""}, false},
		{"container name not a label", makePod("web").with(func(p *corev1.Pod) { p.Spec.Containers[0].Name = "App" }).obj(), wantErr{"spec.containers[0].name", field.ErrorTypeInvalid, "RFC 1123 label"}, false},
		{"duplicate container name", makePod("web").container(corev1.Container{Name: "app", Image: "x"}).obj(), wantErr{"spec.containers[1].name", field.ErrorTypeDuplicate, ""}, false},
		{"init and app share a name", makePod("web").with(func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{{Name: "app", Image: "x"}} }).obj(), wantErr{"spec.containers[0].name", field.ErrorTypeDuplicate, ""}, false},
		{"image required", makePod("web").with(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }).obj(), wantErr{"spec.containers[0].image", field.ErrorTypeRequired, ""}, false},
		{"image whitespace", makePod("web").with(func(p *corev1.Pod) { p.Spec.Containers[0].Image = " nginx" }).obj(), wantErr{"spec.containers[0].image", field.ErrorTypeInvalid, "must not have leading or trailing whitespace"}, false},
		{"restart policy", makePod("web").with(func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }).obj(), wantErr{"spec.restartPolicy", field.ErrorTypeNotSupported, `supported values: "Always", "OnFailure", "Never"`}, false},
		{"restart policy undefaulted", makePod("web").raw(), wantErr{"spec.restartPolicy", field.ErrorTypeRequired, ""}, true},
		{"dns policy", makePod("web").with(func(p *corev1.Pod) { p.Spec.DNSPolicy = "Google" }).obj(), wantErr{"spec.dnsPolicy", field.ErrorTypeNotSupported, ""}, false},
		{"dns none needs config", makePod("web").with(func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSNone }).obj(), wantErr{"spec.dnsConfig", field.ErrorTypeRequired, "must provide `dnsConfig` when `dnsPolicy` is None"}, false},
		{"image pull policy", makePod("web").with(func(p *corev1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "Sometimes" }).obj(), wantErr{"spec.containers[0].imagePullPolicy", field.ErrorTypeNotSupported, `supported values: "Always", "IfNotPresent", "Never"`}, false},
		{"port out of range", makePod("web").with(func(p *corev1.Pod) { p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 70000}} }).obj(), wantErr{"spec.containers[0].ports[0].containerPort", field.ErrorTypeInvalid, "must be between 1 and 65535, inclusive"}, false},
		{"port missing", makePod("web").with(func(p *corev1.Pod) { p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http"}} }).obj(), wantErr{"spec.containers[0].ports[0].containerPort", field.ErrorTypeRequired, ""}, false},
		{"host port out of range", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: -1}}
		}).obj(), wantErr{"spec.containers[0].ports[0].hostPort", field.ErrorTypeInvalid, ""}, false},
		{"port protocol", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: "HTTP"}}
		}).obj(), wantErr{"spec.containers[0].ports[0].protocol", field.ErrorTypeNotSupported, `"SCTP", "TCP", "UDP"`}, false},
		{"port name", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "this-name-is-too-long", ContainerPort: 80}}
		}).obj(), wantErr{"spec.containers[0].ports[0].name", field.ErrorTypeInvalid, "must be no more than 15 characters"}, false},
		{"duplicate port name", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 80}, {Name: "http", ContainerPort: 81}}
		}).obj(), wantErr{"spec.containers[0].ports[1].name", field.ErrorTypeDuplicate, ""}, false},
		{"host network port mismatch", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 81}}
		}).obj(), wantErr{"spec.containers[0].ports[0].containerPort", field.ErrorTypeInvalid, "must match `hostPort` when `hostNetwork` is true"}, false},
		{"env name missing", makePod("web").with(func(p *corev1.Pod) { p.Spec.Containers[0].Env = []corev1.EnvVar{{Value: "x"}} }).obj(), wantErr{"spec.containers[0].env[0].name", field.ErrorTypeRequired, ""}, false},
		{"env name with equals", makePod("web").with(func(p *corev1.Pod) { p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A=B"}} }).obj(), wantErr{"spec.containers[0].env[0].name", field.ErrorTypeInvalid, "other than '='"}, false},
		{"env value and valueFrom", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "x", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}}
		}).obj(), wantErr{"spec.containers[0].env[0].valueFrom", field.ErrorTypeInvalid, "may not be specified when `value` is not empty"}, false},
		{"env two sources", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef:    &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"},
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Key: "k"},
			}}}
		}).obj(), wantErr{"spec.containers[0].env[0].valueFrom", field.ErrorTypeInvalid, "may not have more than one field specified at a time"}, false},
		{"env fieldRef path", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.bogus"}}}}
		}).obj(), wantErr{"spec.containers[0].env[0].valueFrom.fieldRef.fieldPath", field.ErrorTypeNotSupported, ""}, false},
		{"secret key ref key", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}}}
		}).obj(), wantErr{"spec.containers[0].env[0].valueFrom.secretKeyRef.key", field.ErrorTypeRequired, ""}, false},
		{"request above limit", makePod("web").resources(corev1.ResourceList{"cpu": qty("500m")}, corev1.ResourceList{"cpu": qty("1")}).obj(),
			wantErr{"spec.containers[0].resources.requests", field.ErrorTypeInvalid, "must be less than or equal to cpu limit of 500m"}, false},
		{"negative quantity", makePod("web").resources(nil, corev1.ResourceList{"memory": qty("-1")}).obj(),
			wantErr{"spec.containers[0].resources.requests[memory]", field.ErrorTypeInvalid, "must be greater than or equal to 0"}, false},
		{"unknown resource", makePod("web").resources(nil, corev1.ResourceList{"gpu": qty("1")}).obj(),
			wantErr{"spec.containers[0].resources.requests[gpu]", field.ErrorTypeInvalid, "must be a standard resource for containers"}, false},
		{"extended resource fractional", makePod("web").resources(corev1.ResourceList{"example.com/gpu": qty("500m")}, nil).obj(),
			wantErr{"spec.containers[0].resources.limits[example.com/gpu]", field.ErrorTypeInvalid, "must be an integer"}, false},
		{"extended resource request without limit", makePod("web").resources(nil, corev1.ResourceList{"example.com/gpu": qty("1")}).obj(),
			wantErr{"spec.containers[0].resources.limits", field.ErrorTypeRequired, "Limit must be set for non overcommitable resources"}, false},
		{"volume without source", makePod("web").with(func(p *corev1.Pod) { p.Spec.Volumes = []corev1.Volume{{Name: "v"}} }).raw(),
			wantErr{"spec.volumes[0]", field.ErrorTypeRequired, "must specify a volume type"}, true},
		{"volume with two sources", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}, EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}).obj(), wantErr{"spec.volumes[0].emptyDir", field.ErrorTypeForbidden, "may not specify more than 1 volume type"}, false},
		{"duplicate volume", makePod("web").with(func(p *corev1.Pod) { p.Spec.Volumes = []corev1.Volume{{Name: "v"}, {Name: "v"}} }).obj(),
			wantErr{"spec.volumes[1].name", field.ErrorTypeDuplicate, ""}, false},
		{"volume name", makePod("web").with(func(p *corev1.Pod) { p.Spec.Volumes = []corev1.Volume{{Name: "My_Vol"}} }).obj(),
			wantErr{"spec.volumes[0].name", field.ErrorTypeInvalid, ""}, false},
		{"mount of undefined volume", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "nope", MountPath: "/x"}}
		}).obj(),
			wantErr{"spec.containers[0].volumeMounts[0].name", field.ErrorTypeNotFound, `"nope"`}, false},
		{"mount path required", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v"}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v"}}
		}).obj(), wantErr{"spec.containers[0].volumeMounts[0].mountPath", field.ErrorTypeRequired, ""}, false},
		{"duplicate mount path", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v"}, {Name: "w"}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/x"}, {Name: "w", MountPath: "/x"}}
		}).obj(), wantErr{"spec.containers[0].volumeMounts[1].mountPath", field.ErrorTypeInvalid, "must be unique"}, false},
		{"subPath escapes", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v"}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/x", SubPath: "../etc"}}
		}).obj(), wantErr{"spec.containers[0].volumeMounts[0].subPath", field.ErrorTypeInvalid, "must not contain '..'"}, false},
		{"configMap volume name", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}
		}).obj(), wantErr{"spec.volumes[0].configMap.name", field.ErrorTypeRequired, ""}, false},
		{"secret volume mode", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptrTo(int32(01000))}}}}
		}).obj(), wantErr{"spec.volumes[0].secret.defaultMode", field.ErrorTypeInvalid, "must be a number between 0 and 0777 (octal), both inclusive"}, false},
		{"hostPath type", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x", Type: ptrTo(corev1.HostPathType("Pipe"))}}}}
		}).obj(), wantErr{"spec.volumes[0].hostPath.type", field.ErrorTypeNotSupported, ""}, false},
		{"pvc claim name", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{}}}}
		}).obj(), wantErr{"spec.volumes[0].persistentVolumeClaim.claimName", field.ErrorTypeRequired, ""}, false},
		{"probe without handler", makePod("web").with(func(p *corev1.Pod) { p.Spec.Containers[0].LivenessProbe = &corev1.Probe{} }).obj(),
			wantErr{"spec.containers[0].livenessProbe", field.ErrorTypeRequired, "must specify a handler type"}, false},
		{"probe with two handlers", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"x"}}, TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}
		}).obj(), wantErr{"spec.containers[0].readinessProbe.tcpSocket", field.ErrorTypeForbidden, "may not specify more than 1 handler type"}, false},
		{"liveness success threshold", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"x"}}}, SuccessThreshold: 2}
		}).obj(), wantErr{"spec.containers[0].livenessProbe.successThreshold", field.ErrorTypeInvalid, "must be 1"}, false},
		{"negative probe period", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"x"}}}, PeriodSeconds: -1}
		}).obj(), wantErr{"spec.containers[0].readinessProbe.periodSeconds", field.ErrorTypeInvalid, "must be greater than or equal to 0"}, false},
		{"httpGet scheme", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80), Scheme: "FTP"}}}
		}).obj(), wantErr{"spec.containers[0].livenessProbe.httpGet.scheme", field.ErrorTypeNotSupported, `"HTTP", "HTTPS"`}, false},
		{"exec without command", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{}}}
		}).obj(), wantErr{"spec.containers[0].livenessProbe.exec.command", field.ErrorTypeRequired, ""}, false},
		{"probe on plain init container", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "x", ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"x"}}}}}}
		}).obj(), wantErr{"spec.initContainers[0].readinessProbe", field.ErrorTypeForbidden, "may not be set for init containers without restartPolicy=Always"}, false},
		{"restartPolicy on app container", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].RestartPolicy = ptrTo(corev1.ContainerRestartPolicyAlways)
		}).obj(), wantErr{"spec.containers[0].restartPolicy", field.ErrorTypeForbidden, ""}, false},
		{"toleration key", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "bad key", Operator: corev1.TolerationOpExists}}
		}).obj(),
			wantErr{"spec.tolerations[0].key", field.ErrorTypeInvalid, ""}, false},
		{"toleration empty key needs Exists", makePod("web").with(func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{{Value: "x"}} }).obj(),
			wantErr{"spec.tolerations[0].operator", field.ErrorTypeInvalid, "operator must be Exists when `key` is empty"}, false},
		{"toleration Exists with value", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}}
		}).obj(),
			wantErr{"spec.tolerations[0].operator", field.ErrorTypeInvalid, "value must be empty when `operator` is 'Exists'"}, false},
		{"toleration seconds need NoExecute", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptrTo(int64(5))}}
		}).obj(), wantErr{"spec.tolerations[0].effect", field.ErrorTypeInvalid, "effect must be 'NoExecute' when `tolerationSeconds` is set"}, false},
		{"toleration effect", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: "Never"}}
		}).obj(),
			wantErr{"spec.tolerations[0].effect", field.ErrorTypeNotSupported, ""}, false},
		{"toleration operator", makePod("web").with(func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: "Like"}} }).obj(),
			wantErr{"spec.tolerations[0].operator", field.ErrorTypeNotSupported, ""}, false},
		{"node selector label", makePod("web").with(func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd fast"} }).obj(),
			wantErr{"spec.nodeSelector", field.ErrorTypeInvalid, "a valid label must be"}, false},
		{"affinity without terms", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
		}).obj(), wantErr{"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", field.ErrorTypeRequired, "must have at least one node selector term"}, false},
		{"affinity In without values", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn}}}}}}}
		}).obj(), wantErr{"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values", field.ErrorTypeRequired, "must be specified when `operator` is 'In' or 'NotIn'"}, false},
		{"pod affinity without topology key", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{}}}}
		}).obj(), wantErr{"spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey", field.ErrorTypeRequired, "can not be empty"}, false},
		{"preferred weight", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 101}}}}
		}).obj(), wantErr{"spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight", field.ErrorTypeInvalid, "must be in the range 1-100"}, false},
		{"active deadline", makePod("web").with(func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo(int64(0)) }).obj(),
			wantErr{"spec.activeDeadlineSeconds", field.ErrorTypeInvalid, "must be between 1 and 2147483647, inclusive"}, false},
		{"service account name", makePod("web").with(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "Bad_SA" }).obj(),
			wantErr{"spec.serviceAccountName", field.ErrorTypeInvalid, ""}, false},
		{"hostname", makePod("web").with(func(p *corev1.Pod) { p.Spec.Hostname = "a.b" }).obj(),
			wantErr{"spec.hostname", field.ErrorTypeInvalid, ""}, false},
		{"run as user", makePod("web").with(func(p *corev1.Pod) { p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptrTo(int64(-1))} }).obj(),
			wantErr{"spec.securityContext.runAsUser", field.ErrorTypeInvalid, ""}, false},
		{"privileged without escalation", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptrTo(true), AllowPrivilegeEscalation: ptrTo(false)}
		}).obj(), wantErr{"spec.containers[0].securityContext", field.ErrorTypeInvalid, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"}, false},
		{"sysctl name", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}, {Name: "foo-", Value: "1"}}}
		}).obj(), wantErr{"spec.securityContext.sysctls[1].name", field.ErrorTypeInvalid, `must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`}, false},
		{"sysctl name empty", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "", Value: "1"}}}
		}).obj(), wantErr{"spec.securityContext.sysctls[0].name", field.ErrorTypeRequired, ""}, false},
		{"sysctl duplicate", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "1"}, {Name: "kernel.msgmax", Value: "2"}}}
		}).obj(), wantErr{"spec.securityContext.sysctls[1].name", field.ErrorTypeDuplicate, ""}, false},
		{"net sysctl with host network", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net/ipv4/tcp_syncookies", Value: "1"}}}
		}).obj(), wantErr{"spec.securityContext.sysctls[0].name", field.ErrorTypeInvalid, "may not be specified when 'hostNetwork' is true"}, false},
		{"ipc sysctl with host ipc", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.HostIPC = true
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}}}
		}).obj(), wantErr{"spec.securityContext.sysctls[0].name", field.ErrorTypeInvalid, "may not be specified when 'hostIPC' is true"}, false},
		{"topology spread", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 0, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
		}).obj(), wantErr{"spec.topologySpreadConstraints[0].maxSkew", field.ErrorTypeInvalid, ""}, false},
		{"ephemeral containers on create", makePod("web").with(func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
		}).obj(), wantErr{"spec.ephemeralContainers", field.ErrorTypeForbidden, "cannot be set on create"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireError(t, ValidatePod(c.pod), c.want)
		})
	}
}

func TestValidatePodTemplateSpec(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "x"}}}}
	DefaultPodTemplateSpec(tmpl)
	requireNoErrors(t, ValidatePodTemplateSpec(tmpl, field.NewPath("spec", "template")))
	tmpl.Spec.Containers[0].Image = ""
	requireError(t, ValidatePodTemplateSpec(tmpl, field.NewPath("spec", "template")), wantErr{"spec.template.spec.containers[0].image", field.ErrorTypeRequired, ""})
}

func TestValidatePodUpdate(t *testing.T) {
	old := makePod("web").node("n1").with(func(p *corev1.Pod) {
		p.ResourceVersion = "7"
		p.Spec.ActiveDeadlineSeconds = ptrTo(int64(100))
		p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(10))}}
	}).obj()

	allowed := map[string]func(*corev1.Pod){
		"image":                 func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" },
		"lower active deadline": func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo(int64(50)) },
		"add toleration": func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})
		},
		"change toleration seconds": func(p *corev1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = ptrTo(int64(20)) },
		"labels":                    func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} },
	}
	for name, mutate := range allowed {
		t.Run(name, func(t *testing.T) {
			pod := old.DeepCopy()
			mutate(pod)
			requireNoErrors(t, ValidatePodUpdate(pod, old))
		})
	}

	forbidden := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   wantErr
	}{
		{"restart policy", func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever },
			wantErr{"spec", field.ErrorTypeForbidden, "pod updates may not change fields other than " + podUpdatableFields}},
		{"node name", func(p *corev1.Pod) { p.Spec.NodeName = "n2" }, wantErr{"spec", field.ErrorTypeForbidden, "pod updates may not change fields other than"}},
		{"resources", func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"cpu": qty("1")} },
			wantErr{"spec", field.ErrorTypeForbidden, "pod updates may not change fields other than"}},
		{"add container", func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, *p.Spec.Containers[0].DeepCopy()) },
			wantErr{"spec.containers", field.ErrorTypeForbidden, "pod updates may not add or remove containers"}},
		{"remove toleration", func(p *corev1.Pod) { p.Spec.Tolerations = nil },
			wantErr{"spec.tolerations", field.ErrorTypeForbidden, "existing toleration can not be modified except its tolerationSeconds"}},
		{"raise active deadline", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo(int64(200)) },
			wantErr{"spec.activeDeadlineSeconds", field.ErrorTypeInvalid, "must be less than or equal to previous value"}},
		{"unset active deadline", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = nil },
			wantErr{"spec.activeDeadlineSeconds", field.ErrorTypeInvalid, "must not update from a positive integer to nil value"}},
		{"name", func(p *corev1.Pod) { p.Name = "other" }, wantErr{"metadata.name", field.ErrorTypeInvalid, "field is immutable"}},
		{"empty image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }, wantErr{"spec.containers[0].image", field.ErrorTypeRequired, ""}},
	}
	for _, c := range forbidden {
		t.Run(c.name, func(t *testing.T) {
			pod := old.DeepCopy()
			c.mutate(pod)
			requireError(t, ValidatePodUpdate(pod, old), c.want)
		})
	}
}

func TestPodUpdateMessageIncludesDiff(t *testing.T) {
	old := makePod("web").obj()
	pod := old.DeepCopy()
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	errs := ValidatePodUpdate(pod, old)
	if len(errs) != 1 {
		t.Fatalf("errs = %v", errs)
	}
	// go-cmp varies its whitespace on purpose, so look for content, not layout.
	if strings.Count(errs[0].Detail, "RestartPolicy:") != 2 || !strings.Contains(errs[0].Detail, `"Never"`) {
		t.Fatalf("detail lacks the spec diff: %s", errs[0].Detail)
	}
}

func TestPodTerminationGracePeriodMayGoFromNegativeToOne(t *testing.T) {
	old := makePod("web").with(func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptrTo(int64(-1)) }).obj()
	pod := old.DeepCopy()
	pod.Spec.TerminationGracePeriodSeconds = ptrTo(int64(1))
	requireNoErrors(t, ValidatePodUpdate(pod, old))
	pod.Spec.TerminationGracePeriodSeconds = ptrTo(int64(2))
	requireError(t, ValidatePodUpdate(pod, old), wantErr{"spec", field.ErrorTypeForbidden, ""})
}

func TestValidatePodStatusUpdate(t *testing.T) {
	old := makePod("web").obj()
	pod := old.DeepCopy()
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.5", PodIPs: []corev1.PodIP{{IP: "10.0.0.5"}}}
	requireNoErrors(t, ValidatePodStatusUpdate(pod, old))

	pod.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.6"}}
	requireError(t, ValidatePodStatusUpdate(pod, old), wantErr{"status.podIP", field.ErrorTypeInvalid, "must match `podIPs[0]`"})
	pod.Status = corev1.PodStatus{Phase: "Sleeping"}
	requireError(t, ValidatePodStatusUpdate(pod, old), wantErr{"status.phase", field.ErrorTypeNotSupported, ""})
	pod.Status = corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "300.1.1.1"}}}
	requireError(t, ValidatePodStatusUpdate(pod, old), wantErr{"status.podIPs[0].ip", field.ErrorTypeInvalid, ""})
}
