package podsecurity

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/request"
)

// restrictedPod passes the restricted level; mods break it.
func restrictedPod(mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "c", Image: "busybox", SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			}}},
		},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func sc(p *corev1.Pod) *corev1.SecurityContext { return p.Spec.Containers[0].SecurityContext }

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name      string
		level     Level
		pod       *corev1.Pod
		want      string // Detail of the violations, "" for none
		wantSubst string // a part of it, where the whole is long
	}{
		{"restricted pod passes restricted", Restricted, restrictedPod(), "", ""},
		{"anything passes privileged", Privileged, restrictedPod(func(p *corev1.Pod) { p.Spec.HostNetwork = true }), "", ""},
		{"privileged container, baseline", Baseline, restrictedPod(func(p *corev1.Pod) { sc(p).Privileged = ptr.To(true) }),
			`privileged (container "c" must not set securityContext.privileged=true)`, ""},
		{"host namespaces", Baseline, restrictedPod(func(p *corev1.Pod) { p.Spec.HostNetwork, p.Spec.HostIPC = true, true }),
			`host namespaces (hostNetwork=true, hostIPC=true)`, ""},
		{"capabilities beyond the default set", Baseline, restrictedPod(func(p *corev1.Pod) {
			sc(p).Capabilities.Add = []corev1.Capability{"SYS_ADMIN", "CHOWN", "NET_ADMIN"}
		}), `non-default capabilities (container "c" must not include "NET_ADMIN", "SYS_ADMIN" in securityContext.capabilities.add)`, ""},
		{"hostPath volumes", Baseline, restrictedPod(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "a", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}},
				{Name: "b", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}}}
		}), `hostPath volumes (volumes "a", "b")`, ""},
		{"hostPorts in two containers", Baseline, restrictedPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: 8080, ContainerPort: 80}}
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Ports: []corev1.ContainerPort{{HostPort: 443, ContainerPort: 443}}}}
		}), `hostPort (containers "i", "c" use hostPorts 443, 8080)`, ""},
		{"AppArmor unconfined", Baseline, restrictedPod(func(p *corev1.Pod) {
			sc(p).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		}), `forbidden AppArmor profile (container "c" must not set AppArmor profile type to "Unconfined")`, ""},
		{"SELinux user and type", Baseline, restrictedPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{User: "root", Type: "spc_t"}
		}), `seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set)`, ""},
		{"unmasked proc", Baseline, restrictedPod(func(p *corev1.Pod) { sc(p).ProcMount = ptr.To(corev1.UnmaskedProcMount) }),
			`procMount (container "c" must not set securityContext.procMount to "Unmasked")`, ""},
		{"unmasked proc in a user namespace passes baseline", Baseline, restrictedPod(func(p *corev1.Pod) {
			sc(p).ProcMount = ptr.To(corev1.UnmaskedProcMount)
			p.Spec.HostUsers = ptr.To(false)
		}), "", ""},
		{"seccomp unconfined", Baseline, restrictedPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext.SeccompProfile.Type = corev1.SeccompProfileTypeUnconfined
		}), `seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")`, ""},
		{"unsafe sysctl", Baseline, restrictedPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "net.ipv4.tcp_syncookies", Value: "1"}, {Name: "kernel.msgmax", Value: "1"}}
		}), `forbidden sysctls (kernel.msgmax)`, ""},
		{"windows hostProcess", Baseline, restrictedPod(func(p *corev1.Pod) {
			sc(p).WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
		}), `hostProcess (container "c" must not set securityContext.windowsOptions.hostProcess=true)`, ""},
		{"a plain pod passes baseline", Baseline, &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}, "", ""},
		{"a plain pod under restricted", Restricted, &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}},
			`allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ` +
				`unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), ` +
				`runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), ` +
				`seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`, ""},
		{"privileged under restricted: baseline reasons first", Restricted, restrictedPod(func(p *corev1.Pod) {
			sc(p).Privileged = ptr.To(true)
			sc(p).AllowPrivilegeEscalation = ptr.To(true)
		}), `privileged (container "c" must not set securityContext.privileged=true), allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false)`, ""},
		{"restricted capabilities: only NET_BIND_SERVICE may be added", Restricted, restrictedPod(func(p *corev1.Pod) {
			sc(p).Capabilities.Add = []corev1.Capability{"NET_BIND_SERVICE", "CHOWN"}
		}), `unrestricted capabilities (container "c" must not include "CHOWN" in securityContext.capabilities.add)`, ""},
		{"restricted volume types", Restricted, restrictedPod(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "n", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/"}}},
				{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}), `restricted volume types (volume "n" uses restricted volume type "nfs")`, ""},
		{"runAsNonRoot false on the pod and a container", Restricted, restrictedPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext.RunAsNonRoot = ptr.To(false)
			sc(p).RunAsNonRoot = ptr.To(false)
		}), `runAsNonRoot != true (pod and container "c" must not set securityContext.runAsNonRoot=false)`, ""},
		{"runAsUser 0", Restricted, restrictedPod(func(p *corev1.Pod) { sc(p).RunAsUser = ptr.To(int64(0)) }),
			`runAsUser=0 (container "c" must not set runAsUser=0)`, ""},
		{"container seccomp Localhost is fine without a pod profile", Restricted, restrictedPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext.SeccompProfile = nil
			sc(p).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("p.json")}
		}), "", ""},
		{"restricted procMount has no user namespace relief", Restricted, restrictedPod(func(p *corev1.Pod) {
			sc(p).ProcMount = ptr.To(corev1.UnmaskedProcMount)
			p.Spec.HostUsers = ptr.To(false)
		}), `procMount (container "c" must not set securityContext.procMount to "Unmasked")`, ""},
		{"ephemeral containers are checked", Baseline, restrictedPod(func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg",
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}
		}), `privileged (container "dbg" must not set securityContext.privileged=true)`, ""},
		// The host probe control came after v1.33, the version "latest" stands for (see
		// TestEvaluateAtVersion for it at v1.34).
		{"probe host", Baseline, restrictedPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: "10.0.0.1"}}}
		}), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Detail(Evaluate(tt.level, &tt.pod.ObjectMeta, &tt.pod.Spec))
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestPolicyFromLabels(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		labels  map[string]string
		want    Policy
		wantErr string
	}{
		{"no labels: privileged", Config{}, nil, Policy{
			Enforce: LevelVersion{Privileged, "latest"}, Audit: LevelVersion{Privileged, "latest"}, Warn: LevelVersion{Privileged, "latest"}}, ""},
		{"labels with versions", Config{}, map[string]string{EnforceLabel: "baseline", EnforceLabel + "-version": "v1.30", WarnLabel: "restricted"}, Policy{
			Enforce: LevelVersion{Baseline, "v1.30"}, Audit: LevelVersion{Privileged, "latest"}, Warn: LevelVersion{Restricted, "latest"}}, ""},
		{"defaults apply where no label", Config{Defaults: Defaults{Enforce: "baseline", Warn: "restricted"}}, map[string]string{WarnLabel: "baseline"}, Policy{
			Enforce: LevelVersion{Baseline, "latest"}, Audit: LevelVersion{Privileged, "latest"}, Warn: LevelVersion{Baseline, "latest"}}, ""},
		{"a bad level fails closed", Config{}, map[string]string{EnforceLabel: "strict"}, Policy{
			Enforce: LevelVersion{Restricted, "latest"}, Audit: LevelVersion{Privileged, "latest"}, Warn: LevelVersion{Privileged, "latest"}},
			`metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted`},
		{"a bad version is latest", Config{}, map[string]string{AuditLabel: "baseline", AuditLabel + "-version": "1.30"}, Policy{
			Enforce: LevelVersion{Privileged, "latest"}, Audit: LevelVersion{Baseline, "latest"}, Warn: LevelVersion{Privileged, "latest"}},
			`metadata.labels[pod-security.kubernetes.io/audit-version]: Invalid value: "1.30": must be "latest" or "v1.x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := tt.cfg.policy(tt.labels)
			if got != tt.want {
				t.Errorf("policy %+v, want %+v", got, tt.want)
			}
			gotErr := ""
			if len(errs) > 0 {
				gotErr = errs.ToAggregate().Error()
			}
			if gotErr != tt.wantErr {
				t.Errorf("errors %q, want %q", gotErr, tt.wantErr)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	bad := restrictedPod(func(p *corev1.Pod) { sc(p).Privileged = ptr.To(true) })
	baseline, restricted := LevelVersion{Baseline, "latest"}, LevelVersion{Restricted, "v1.31"}
	priv := LevelVersion{Privileged, "latest"}
	tests := []struct {
		name         string
		policy       Policy
		isPod        bool
		wantDeny     string
		wantWarnings int
		wantAudit    bool
	}{
		{"enforce denies a pod", Policy{Enforce: baseline, Audit: priv, Warn: baseline}, true,
			`violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)`, 0, false},
		{"warn only", Policy{Enforce: priv, Audit: priv, Warn: restricted}, true, "", 1, false},
		{"audit only", Policy{Enforce: priv, Audit: restricted, Warn: priv}, true, "", 0, true},
		{"a workload template is never denied", Policy{Enforce: baseline, Audit: baseline, Warn: baseline}, false, "", 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.policy, &bad.ObjectMeta, &bad.Spec, tt.isPod)
			if d.Deny != tt.wantDeny {
				t.Errorf("deny %q, want %q", d.Deny, tt.wantDeny)
			}
			if len(d.Warnings) != tt.wantWarnings {
				t.Errorf("warnings %q, want %d", d.Warnings, tt.wantWarnings)
			}
			for _, w := range d.Warnings {
				if !strings.HasPrefix(w, "would violate PodSecurity ") {
					t.Errorf("warning %q", w)
				}
			}
			if _, ok := d.Audit[AuditViolations]; ok != tt.wantAudit {
				t.Errorf("audit annotations %v, want violations %v", d.Audit, tt.wantAudit)
			}
		})
	}
}

func TestExistingPodWarnings(t *testing.T) {
	priv := func(name string) corev1.Pod {
		return *restrictedPod(func(p *corev1.Pod) { p.Name = name; sc(p).Privileged = ptr.To(true) })
	}
	hostNet := *restrictedPod(func(p *corev1.Pod) { p.Name = "net"; p.Spec.HostNetwork = true })
	got := ExistingPodWarnings("ns", LevelVersion{Baseline, "latest"}, []corev1.Pod{priv("b"), priv("a"), priv("c"), hostNet, *restrictedPod()})
	want := []string{
		`existing pods in namespace "ns" violate the new PodSecurity enforce level "baseline:latest"`,
		`net: host namespaces`,
		`a (and 2 other pods): privileged`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// nsLookup serves namespaces and a pod list.
type nsLookup struct {
	namespaces map[string]*corev1.Namespace
	pods       []corev1.Pod
}

func (l nsLookup) Get(_ context.Context, group, resource, _, name string) (runtime.Object, error) {
	if ns, ok := l.namespaces[name]; ok && resource == "namespaces" {
		return ns, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: resource}, name)
}

func (l nsLookup) List(context.Context, string, string, string) (runtime.Object, error) {
	return &corev1.PodList{Items: l.pods}, nil
}

func TestPluginValidate(t *testing.T) {
	pods := &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Plural: "pods", Namespaced: true}
	namespaces := &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Plural: "namespaces"}
	deployments := &registry.Resource{GroupVersion: appsv1.SchemeGroupVersion, Plural: "deployments", Namespaced: true}
	ns := func(name string, labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	lookup := nsLookup{namespaces: map[string]*corev1.Namespace{
		"strict": ns("strict", map[string]string{EnforceLabel: "restricted"}),
		"loose":  ns("loose", map[string]string{WarnLabel: "baseline", AuditLabel: "baseline"}),
		"free":   ns("free", nil),
		"exempt": ns("exempt", map[string]string{EnforceLabel: "restricted"}),
	}, pods: []corev1.Pod{*restrictedPod(func(p *corev1.Pod) { p.Spec.HostPID = true })}}
	plugin := New(Config{Exemptions: Exemptions{Namespaces: []string{"exempt"}, Usernames: []string{"system:admin-bot"}}}, nil)
	privileged := func(ns string) *corev1.Pod {
		return restrictedPod(func(p *corev1.Pod) { p.Namespace = ns; sc(p).Privileged = ptr.To(true) })
	}
	tests := []struct {
		name        string
		attrs       admission.Attributes
		wantErr     string
		wantWarning string
		wantAudit   string
	}{
		{"restricted namespace refuses a privileged pod", admission.Attributes{Verb: "create", Resource: pods, Namespace: "strict", Name: "x", Object: privileged("strict")},
			`pods "x" is forbidden: violates PodSecurity "restricted:latest": privileged (container "c" must not set securityContext.privileged=true)`, "", ""},
		{"warn namespace warns", admission.Attributes{Verb: "create", Resource: pods, Namespace: "loose", Name: "x", Object: privileged("loose")},
			"", `would violate PodSecurity "baseline:latest": privileged`, `would violate PodSecurity "baseline:latest": privileged`},
		{"unlabelled namespace is privileged", admission.Attributes{Verb: "create", Resource: pods, Namespace: "free", Name: "x", Object: privileged("free")}, "", "", ""},
		{"exempt namespace", admission.Attributes{Verb: "create", Resource: pods, Namespace: "exempt", Name: "x", Object: privileged("exempt")}, "", "", ""},
		{"exempt user", admission.Attributes{Verb: "create", Resource: pods, Namespace: "strict", Name: "x", Object: privileged("strict"), User: &request.UserInfo{Name: "system:admin-bot"}}, "", "", ""},
		{"status updates are not judged", admission.Attributes{Verb: "update", Resource: pods, Subresource: "status", Namespace: "strict", Name: "x", Object: privileged("strict"), OldObject: privileged("strict")}, "", "", ""},
		{"an image-only update is not judged", admission.Attributes{Verb: "update", Resource: pods, Namespace: "strict", Name: "x",
			Object: restrictedPod(func(p *corev1.Pod) { sc(p).Privileged = ptr.To(true); p.Spec.Containers[0].Image = "nginx" }), OldObject: privileged("strict")}, "", "", ""},
		{"a bad label on a new namespace is invalid", admission.Attributes{Verb: "create", Resource: namespaces, Name: "n", Object: ns("n", map[string]string{EnforceLabel: "strict"})},
			`Namespace "n" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted`, "", ""},
		{"a Deployment is warned, never refused", admission.Attributes{Verb: "create", Resource: deployments, Namespace: "loose", Name: "d", Object: &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "loose"}, Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: privileged("loose").Spec}}}},
			"", `would violate PodSecurity "baseline:latest": privileged`, `would violate PodSecurity "baseline:latest": privileged`},
		{"a Deployment in an enforce-only namespace is admitted silently", admission.Attributes{Verb: "create", Resource: deployments, Namespace: "strict", Name: "d", Object: &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "strict"}, Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: privileged("strict").Spec}}}},
			"", "", ""},
		{"tightening a namespace warns about its pods", admission.Attributes{Verb: "update", Resource: namespaces, Name: "free",
			Object: ns("free", map[string]string{EnforceLabel: "baseline"}), OldObject: ns("free", nil)},
			"", `existing pods in namespace "free" violate the new PodSecurity enforce level "baseline:latest"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, warnings := warningContext()
			attrs := tt.attrs
			err := plugin.Validate(ctx, &attrs, lookup)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tt.wantErr {
				t.Fatalf("error %q\nwant  %q", gotErr, tt.wantErr)
			}
			if err != nil && tt.attrs.Resource == pods && !apierrors.IsForbidden(err) {
				t.Errorf("error %v is not a Forbidden", err)
			}
			if got := warnings(); !strings.Contains(got, tt.wantWarning) || (tt.wantWarning == "") != (got == "") {
				t.Errorf("warnings %q, want one with %q", got, tt.wantWarning)
			}
			if got := attrs.AuditAnnotations[AuditViolations]; !strings.HasPrefix(got, tt.wantAudit) || (tt.wantAudit == "") != (got == "") {
				t.Errorf("audit violations %q, want %q", got, tt.wantAudit)
			}
		})
	}
}

// warningContext is a context that collects admission warnings, and their reader.
func warningContext() (context.Context, func() string) {
	ctx, warnings := admission.WithWarnings(context.Background())
	return ctx, func() string { return strings.Join(warnings.Messages(), "\n") }
}

// TestEvaluateAtVersion: the enforce-version label picks that version's checks: restricted
// controls newer than it do not apply, and the allowed sysctls and SELinux types are its own.
func TestEvaluateAtVersion(t *testing.T) {
	rootPod := restrictedPod(func(p *corev1.Pod) {
		// runAsUser=0 (a v1.23 control) and no seccomp profile (a v1.19 control).
		p.Spec.SecurityContext.RunAsUser = ptr.To(int64(0))
		p.Spec.SecurityContext.SeccompProfile = nil
		sc(p).SeccompProfile = nil
	})
	sysctlPod := restrictedPod(func(p *corev1.Pod) {
		p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "net.ipv4.tcp_rmem", Value: "4096 87380 6291456"}}
	})
	selinuxPod := restrictedPod(func(p *corev1.Pod) {
		sc(p).SELinuxOptions = &corev1.SELinuxOptions{Type: "container_engine_t"}
	})
	probePod := restrictedPod(func(p *corev1.Pod) {
		p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Host: "10.0.0.1"}}}
	})
	tests := []struct {
		name    string
		lv      LevelVersion
		pod     *corev1.Pod
		reasons string // Reasons of the violations
	}{
		{"runAsUser and seccomp at latest", LevelVersion{Restricted, "latest"}, rootPod, "runAsUser=0, seccompProfile"},
		{"runAsUser and seccomp at v1.23", LevelVersion{Restricted, "v1.23"}, rootPod, "runAsUser=0, seccompProfile"},
		{"no runAsUser control before v1.23", LevelVersion{Restricted, "v1.22"}, rootPod, "seccompProfile"},
		{"no seccomp control before v1.19", LevelVersion{Restricted, "v1.18"}, rootPod, ""},
		{"tcp_rmem is safe from v1.32", LevelVersion{Baseline, "v1.32"}, sysctlPod, ""},
		{"tcp_rmem is forbidden before v1.32", LevelVersion{Baseline, "v1.31"}, sysctlPod, "forbidden sysctls"},
		{"container_engine_t from v1.31", LevelVersion{Baseline, "v1.31"}, selinuxPod, ""},
		{"container_engine_t forbidden before v1.31", LevelVersion{Baseline, "v1.30"}, selinuxPod, "seLinuxOptions"},
		{"no host probe control at latest (v1.33)", LevelVersion{Baseline, "latest"}, probePod, ""},
		{"host probes at v1.34", LevelVersion{Baseline, "v1.34"}, probePod, "probe or lifecycle host"},
		{"no host probe control at v1.33", LevelVersion{Baseline, "v1.33"}, probePod, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Reasons(EvaluateAt(tt.lv, &tt.pod.ObjectMeta, &tt.pod.Spec)); got != tt.reasons {
				t.Errorf("Reasons = %q, want %q", got, tt.reasons)
			}
		})
	}
}
