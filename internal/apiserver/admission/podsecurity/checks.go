package podsecurity

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Level is a Pod Security Standards level.
type Level string

// The three levels, from the most to the least permissive.
const (
	Privileged Level = "privileged"
	Baseline   Level = "baseline"
	Restricted Level = "restricted"
)

// Violation is one failed check: a short reason and the detail naming what is at fault, worded
// as Kubernetes' PodSecurity admission words it.
type Violation struct {
	Reason string
	Detail string
}

// check is one control of the standards; it returns nil when the pod passes.
type check func(meta *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation

// versionedCheck is a control as of the standards' version (the minor of v1.N) it applies from;
// at gives the control's rules at a version (most are the same at every version).
type versionedCheck struct {
	since int
	at    func(minor int) check
}

func always(c check) versionedCheck { return versionedCheck{at: func(int) check { return c }} }

func since(minor int, c check) versionedCheck {
	return versionedCheck{since: minor, at: func(int) check { return c }}
}

// latestMinor is what "latest" stands for: as in Kubernetes, where "latest" is the policy of the
// API server's own version, it is the version whose API skiff serves (v1.33, the conformance
// suite it runs). Controls upstream added later (the host probe control, taken as v1.34) apply
// only to namespaces that name such a version; a v1.33 client's pods with a probe on the pod's
// own address (conformance's lifecycle hook specs) pass baseline:latest, as upstream's.
const latestMinor = 33

// baselineChecks are the baseline level's controls, in the order upstream reports them.
var baselineChecks = []versionedCheck{
	always(checkAppArmor), always(checkCapabilitiesBaseline), always(checkHostNamespaces), always(checkHostPathVolumes), always(checkHostPorts),
	since(34, checkHostProbes), always(checkPrivileged), always(checkProcMount), {at: checkSELinuxAt}, always(checkSeccompBaseline),
	{at: checkSysctlsAt}, always(checkWindowsHostProcess),
}

// restrictedChecks are the restricted level's controls: the baseline ones first, then those of
// the restricted level, each group in upstream's order. The restricted capabilities, procMount and
// seccomp controls replace their baseline counterparts, as upstream's overrides do (before the
// version a restricted control starts at, the level has no such control).
var restrictedChecks = []versionedCheck{
	always(checkAppArmor), always(checkHostNamespaces), always(checkHostPathVolumes), always(checkHostPorts), since(34, checkHostProbes),
	always(checkPrivileged), {at: checkSELinuxAt}, {at: checkSysctlsAt}, always(checkWindowsHostProcess),
	since(8, checkAllowPrivilegeEscalation), since(22, checkCapabilitiesRestricted), always(checkProcMountRestricted),
	always(checkRestrictedVolumes), always(checkRunAsNonRoot), since(23, checkRunAsUser), since(19, checkSeccompRestricted),
}

// Evaluate runs level's latest controls over a pod (or a pod template's) metadata and spec.
func Evaluate(level Level, meta *metav1.ObjectMeta, spec *corev1.PodSpec) []Violation {
	return EvaluateAt(LevelVersion{Level: level, Version: latest}, meta, spec)
}

// EvaluateAt runs the controls of a level as they were at its version (the
// pod-security.kubernetes.io/<mode>-version label): a control newer than the version does not
// apply, and the allowed sysctls and SELinux types are that version's. What skiff implements
// differs by version as upstream's v1.33 checks do, plus the host probe control and two sysctls
// that later upstream releases added (taken as v1.34). The Windows-pod exemptions of the
// restricted controls (upstream's v1.25 variants) apply at every version.
func EvaluateAt(lv LevelVersion, meta *metav1.ObjectMeta, spec *corev1.PodSpec) []Violation {
	var checks []versionedCheck
	switch lv.Level {
	case Privileged:
		return nil
	case Baseline:
		checks = baselineChecks
	default:
		checks = restrictedChecks
	}
	minor := versionMinor(lv.Version)
	var out []Violation
	for _, c := range checks {
		if minor < c.since {
			continue
		}
		if v := c.at(minor)(meta, spec); v != nil {
			out = append(out, *v)
		}
	}
	return out
}

// versionMinor is N of "v1.N"; "latest" (or anything else, which the policy turned into latest
// already) is every version.
func versionMinor(v string) int {
	if n, ok := strings.CutPrefix(v, "v1."); ok {
		if minor, err := strconv.Atoi(n); err == nil {
			return minor
		}
	}
	return latestMinor
}

// Detail is the violations as upstream joins them: "reason (detail), reason (detail)".
func Detail(vs []Violation) string {
	parts := make([]string, 0, len(vs))
	for _, v := range vs {
		if v.Detail == "" {
			parts = append(parts, v.Reason)
		} else {
			parts = append(parts, v.Reason+" ("+v.Detail+")")
		}
	}
	return strings.Join(parts, ", ")
}

// Reasons is the violations' reasons only, as the warnings about existing pods list them.
func Reasons(vs []Violation) string {
	parts := make([]string, 0, len(vs))
	for _, v := range vs {
		parts = append(parts, v.Reason)
	}
	return strings.Join(parts, ", ")
}

func plural(one, many string, n int) string {
	if n == 1 {
		return one
	}
	return many
}

func quoted(items []string) string {
	if len(items) == 0 {
		return ""
	}
	return `"` + strings.Join(items, `", "`) + `"`
}

// sortedSet is a small ordered set of strings for the details' value lists.
type sortedSet map[string]struct{}

func (s sortedSet) add(v string) { s[v] = struct{}{} }

func (s sortedSet) list() []string {
	out := make([]string, 0, len(s))
	for v := range s {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// eachContainer visits init, regular and ephemeral containers.
func eachContainer(spec *corev1.PodSpec, f func(name string, sc *corev1.SecurityContext, c *corev1.Container)) {
	for i := range spec.InitContainers {
		f(spec.InitContainers[i].Name, spec.InitContainers[i].SecurityContext, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		f(spec.Containers[i].Name, spec.Containers[i].SecurityContext, &spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		ec := &spec.EphemeralContainers[i]
		c := corev1.Container{Name: ec.Name, SecurityContext: ec.SecurityContext, Ports: ec.Ports,
			LivenessProbe: ec.LivenessProbe, ReadinessProbe: ec.ReadinessProbe, StartupProbe: ec.StartupProbe, Lifecycle: ec.Lifecycle}
		f(ec.Name, ec.SecurityContext, &c)
	}
}

// containersWhere lists the containers for which bad is true.
func containersWhere(spec *corev1.PodSpec, bad func(sc *corev1.SecurityContext, c *corev1.Container) bool) []string {
	var names []string
	eachContainer(spec, func(name string, sc *corev1.SecurityContext, c *corev1.Container) {
		if bad(sc, c) {
			names = append(names, name)
		}
	})
	return names
}

// containersPhrase is `container "a"` or `containers "a", "b"`.
func containersPhrase(names []string) string {
	return plural("container", "containers", len(names)) + " " + quoted(names)
}

// userNamespaced pods (hostUsers: false) are let off the user-related controls.
func userNamespaced(spec *corev1.PodSpec) bool {
	return spec.HostUsers != nil && !*spec.HostUsers
}

func podSC(spec *corev1.PodSpec) *corev1.PodSecurityContext {
	if spec.SecurityContext == nil {
		return &corev1.PodSecurityContext{}
	}
	return spec.SecurityContext
}

func checkHostNamespaces(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
	var set []string
	if spec.HostNetwork {
		set = append(set, "hostNetwork=true")
	}
	if spec.HostPID {
		set = append(set, "hostPID=true")
	}
	if spec.HostIPC {
		set = append(set, "hostIPC=true")
	}
	if len(set) == 0 {
		return nil
	}
	return &Violation{Reason: "host namespaces", Detail: strings.Join(set, ", ")}
}

func checkPrivileged(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
	bad := containersWhere(spec, func(sc *corev1.SecurityContext, _ *corev1.Container) bool {
		return sc != nil && sc.Privileged != nil && *sc.Privileged
	})
	if len(bad) == 0 {
		return nil
	}
	return &Violation{Reason: "privileged", Detail: containersPhrase(bad) + " must not set securityContext.privileged=true"}
}

// baselineCapabilities are the capabilities a container runtime grants by default.
var baselineCapabilities = map[corev1.Capability]bool{
	"AUDIT_WRITE": true, "CHOWN": true, "DAC_OVERRIDE": true, "FOWNER": true, "FSETID": true, "KILL": true, "MKNOD": true,
	"NET_BIND_SERVICE": true, "SETFCAP": true, "SETGID": true, "SETPCAP": true, "SETUID": true, "SYS_CHROOT": true,
}

func checkCapabilitiesBaseline(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
	caps := sortedSet{}
	bad := containersWhere(spec, func(sc *corev1.SecurityContext, _ *corev1.Container) bool {
		found := false
		if sc != nil && sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if !baselineCapabilities[c] {
					found = true
					caps.add(string(c))
				}
			}
		}
		return found
	})
	if len(bad) == 0 {
		return nil
	}
	return &Violation{Reason: "non-default capabilities",
		Detail: fmt.Sprintf("%s must not include %s in securityContext.capabilities.add", containersPhrase(bad), quoted(caps.list()))}
}

func checkCapabilitiesRestricted(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
	caps := sortedSet{}
	var noDrop, adding []string
	eachContainer(spec, func(name string, sc *corev1.SecurityContext, _ *corev1.Container) {
		if sc == nil || sc.Capabilities == nil {
			noDrop = append(noDrop, name)
			return
		}
		dropsAll := false
		for _, c := range sc.Capabilities.Drop {
			dropsAll = dropsAll || c == "ALL"
		}
		if !dropsAll {
			noDrop = append(noDrop, name)
		}
		adds := false
		for _, c := range sc.Capabilities.Add {
			if c != "NET_BIND_SERVICE" {
				adds = true
				caps.add(string(c))
			}
		}
		if adds {
			adding = append(adding, name)
		}
	})
	var details []string
	if len(noDrop) > 0 {
		details = append(details, containersPhrase(noDrop)+` must set securityContext.capabilities.drop=["ALL"]`)
	}
	if len(adding) > 0 {
		details = append(details, fmt.Sprintf("%s must not include %s in securityContext.capabilities.add", containersPhrase(adding), quoted(caps.list())))
	}
	if len(details) == 0 {
		return nil
	}
	return &Violation{Reason: "unrestricted capabilities", Detail: strings.Join(details, "; ")}
}

func checkHostPathVolumes(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
	var bad []string
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			bad = append(bad, v.Name)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return &Violation{Reason: "hostPath volumes", Detail: plural("volume", "volumes", len(bad)) + " " + quoted(bad)}
}

func checkHostPorts(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
	ports := sortedSet{}
	bad := containersWhere(spec, func(_ *corev1.SecurityContext, c *corev1.Container) bool {
		found := false
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				found = true
				ports.add(strconv.Itoa(int(p.HostPort)))
			}
		}
		return found
	})
	if len(bad) == 0 {
		return nil
	}
	list := ports.list()
	return &Violation{Reason: "hostPort", Detail: fmt.Sprintf("%s %s %s %s", containersPhrase(bad),
		plural("uses", "use", len(bad)), plural("hostPort", "hostPorts", len(list)), strings.Join(list, ", "))}
}

func checkHostProbes(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
	hosts := sortedSet{}
	bad := containersWhere(spec, func(_ *corev1.SecurityContext, c *corev1.Container) bool {
		found := false
		note := func(host string) {
			if host != "" {
				found = true
				hosts.add(host)
			}
		}
		for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if p != nil && p.HTTPGet != nil {
				note(p.HTTPGet.Host)
			}
			if p != nil && p.TCPSocket != nil {
				note(p.TCPSocket.Host)
			}
		}
		if c.Lifecycle != nil {
			for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
				if h != nil && h.HTTPGet != nil {
					note(h.HTTPGet.Host)
				}
				if h != nil && h.TCPSocket != nil {
					note(h.TCPSocket.Host)
				}
			}
		}
		return found
	})
	if len(bad) == 0 {
		return nil
	}
	list := hosts.list()
	return &Violation{Reason: "probe or lifecycle host", Detail: fmt.Sprintf("%s %s %s %s", containersPhrase(bad),
		plural("uses", "use", len(bad)), plural("probe or lifecycle host", "probe or lifecycle hosts", len(list)), quoted(list))}
}

func checkAppArmor(meta *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
	okType := func(t corev1.AppArmorProfileType) bool {
		return t == corev1.AppArmorProfileTypeRuntimeDefault || t == corev1.AppArmorProfileTypeLocalhost
	}
	values := sortedSet{}
	var setters []string
	if p := podSC(spec).AppArmorProfile; p != nil && !okType(p.Type) {
		setters = append(setters, "pod")
		values.add(string(p.Type))
	}
	bad := containersWhere(spec, func(sc *corev1.SecurityContext, _ *corev1.Container) bool {
		if sc != nil && sc.AppArmorProfile != nil && !okType(sc.AppArmorProfile.Type) {
			values.add(string(sc.AppArmorProfile.Type))
			return true
		}
		return false
	})
	if len(bad) > 0 {
		setters = append(setters, containersPhrase(bad))
	}
	list := values.list()
	var annotations []string
	for k, v := range meta.Annotations {
		if strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) &&
			v != "" && v != corev1.DeprecatedAppArmorBetaProfileRuntimeDefault && !strings.HasPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix) {
			annotations = append(annotations, fmt.Sprintf("%s=%q", k, v))
		}
	}
	if len(annotations) > 0 {
		sort.Strings(annotations)
		list = append(list, annotations...)
		setters = append(setters, plural("annotation", "annotations", len(annotations)))
	}
	if len(setters) == 0 {
		return nil
	}
	return &Violation{Reason: plural("forbidden AppArmor profile", "forbidden AppArmor profiles", len(list)),
		Detail: fmt.Sprintf("%s must not set AppArmor profile type to %s", strings.Join(setters, " and "), quoted(list))}
}

// checkProcMount lets user-namespaced pods (hostUsers: false) set any procMount.
func checkProcMount(meta *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
	if userNamespaced(spec) {
		return nil
	}
	return checkProcMountRestricted(meta, spec)
}

// checkProcMountRestricted allows only the default procMount, user namespace or not.
func checkProcMountRestricted(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
	types := sortedSet{}
	bad := containersWhere(spec, func(sc *corev1.SecurityContext, _ *corev1.Container) bool {
		if sc != nil && sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
			types.add(string(*sc.ProcMount))
			return true
		}
		return false
	})
	if len(bad) == 0 {
		return nil
	}
	return &Violation{Reason: "procMount", Detail: fmt.Sprintf("%s must not set securityContext.procMount to %s", containersPhrase(bad), quoted(types.list()))}
}

// selinuxTypes are the SELinux types the baseline level allows; container_engine_t from v1.31.
var selinuxTypes = map[string]bool{"": true, "container_t": true, "container_init_t": true, "container_kvm_t": true, "container_engine_t": true}

func checkSELinuxAt(minor int) check {
	if minor >= 31 {
		return checkSELinux
	}
	return func(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
		return checkSELinuxTypes(spec, func(t string) bool { return selinuxTypes[t] && t != "container_engine_t" })
	}
}

func checkSELinux(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
	return checkSELinuxTypes(spec, func(t string) bool { return selinuxTypes[t] })
}

func checkSELinuxTypes(spec *corev1.PodSpec, allowed func(string) bool) *Violation {
	types := sortedSet{}
	user, role := false, false
	ok := func(o *corev1.SELinuxOptions) bool {
		good := true
		if !allowed(o.Type) {
			good = false
			types.add(o.Type)
		}
		if o.User != "" {
			good, user = false, true
		}
		if o.Role != "" {
			good, role = false, true
		}
		return good
	}
	var setters []string
	if o := podSC(spec).SELinuxOptions; o != nil && !ok(o) {
		setters = append(setters, "pod")
	}
	bad := containersWhere(spec, func(sc *corev1.SecurityContext, _ *corev1.Container) bool {
		return sc != nil && sc.SELinuxOptions != nil && !ok(sc.SELinuxOptions)
	})
	if len(bad) > 0 {
		setters = append(setters, containersPhrase(bad))
	}
	if len(setters) == 0 {
		return nil
	}
	var what []string
	if list := types.list(); len(list) > 0 {
		what = append(what, plural("type", "types", len(list))+" "+quoted(list))
	}
	if user {
		what = append(what, "user may not be set")
	}
	if role {
		what = append(what, "role may not be set")
	}
	return &Violation{Reason: "seLinuxOptions",
		Detail: fmt.Sprintf("%s set forbidden securityContext.seLinuxOptions: %s", strings.Join(setters, " and "), strings.Join(what, "; "))}
}

func checkSeccompBaseline(meta *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
	values := sortedSet{}
	var setters []string
	if p := podSC(spec).SeccompProfile; p != nil && p.Type == corev1.SeccompProfileTypeUnconfined {
		setters = append(setters, "pod")
		values.add(string(p.Type))
	}
	bad := containersWhere(spec, func(sc *corev1.SecurityContext, _ *corev1.Container) bool {
		if sc != nil && sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined {
			values.add(string(sc.SeccompProfile.Type))
			return true
		}
		return false
	})
	if len(bad) > 0 {
		setters = append(setters, containersPhrase(bad))
	}
	if len(setters) == 0 {
		return nil
	}
	return &Violation{Reason: "seccompProfile",
		Detail: fmt.Sprintf("%s must not set securityContext.seccompProfile.type to %s", strings.Join(setters, " and "), quoted(values.list()))}
}

func checkSeccompRestricted(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
	okType := func(t corev1.SeccompProfileType) bool {
		return t == corev1.SeccompProfileTypeRuntimeDefault || t == corev1.SeccompProfileTypeLocalhost
	}
	values := sortedSet{}
	var setters []string
	podSet := false
	if p := podSC(spec).SeccompProfile; p != nil {
		if okType(p.Type) {
			podSet = true
		} else {
			setters = append(setters, "pod")
			values.add(string(p.Type))
		}
	}
	var explicit, implicit []string
	eachContainer(spec, func(name string, sc *corev1.SecurityContext, _ *corev1.Container) {
		switch {
		case sc != nil && sc.SeccompProfile != nil:
			if !okType(sc.SeccompProfile.Type) {
				explicit = append(explicit, name)
				values.add(string(sc.SeccompProfile.Type))
			}
		case !podSet:
			implicit = append(implicit, name)
		}
	})
	if len(explicit) > 0 {
		setters = append(setters, containersPhrase(explicit))
	}
	if len(setters) > 0 {
		return &Violation{Reason: "seccompProfile",
			Detail: fmt.Sprintf("%s must not set securityContext.seccompProfile.type to %s", strings.Join(setters, " and "), quoted(values.list()))}
	}
	if len(implicit) > 0 {
		return &Violation{Reason: "seccompProfile",
			Detail: fmt.Sprintf(`pod or %s must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`, containersPhrase(implicit))}
	}
	return nil
}

// safeSysctls are the namespaced sysctls the baseline level allows (upstream's latest set).
var safeSysctls = map[string]bool{
	"kernel.shm_rmid_forced": true, "net.ipv4.ip_local_port_range": true, "net.ipv4.tcp_syncookies": true,
	"net.ipv4.ping_group_range": true, "net.ipv4.ip_unprivileged_port_start": true, "net.ipv4.ip_local_reserved_ports": true,
	"net.ipv4.tcp_keepalive_time": true, "net.ipv4.tcp_fin_timeout": true, "net.ipv4.tcp_keepalive_intvl": true,
	"net.ipv4.tcp_keepalive_probes": true, "net.ipv4.tcp_rmem": true, "net.ipv4.tcp_wmem": true,
	"net.ipv4.tcp_slow_start_after_idle": true, "net.ipv4.tcp_notsent_lowat": true,
}

// sysctlSince are the versions safe sysctls joined the baseline level's set (absent: v1.0);
// tcp_slow_start_after_idle and tcp_notsent_lowat came after v1.33 and are taken as v1.34.
var sysctlSince = map[string]int{
	"net.ipv4.ip_local_reserved_ports": 27,
	"net.ipv4.tcp_keepalive_time":      29, "net.ipv4.tcp_fin_timeout": 29, "net.ipv4.tcp_keepalive_intvl": 29, "net.ipv4.tcp_keepalive_probes": 29,
	"net.ipv4.tcp_rmem": 32, "net.ipv4.tcp_wmem": 32,
	"net.ipv4.tcp_slow_start_after_idle": 34, "net.ipv4.tcp_notsent_lowat": 34,
}

func checkSysctlsAt(minor int) check {
	return func(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
		return checkSysctlSet(spec, func(name string) bool { return safeSysctls[name] && minor >= sysctlSince[name] })
	}
}

func checkSysctlSet(spec *corev1.PodSpec, allowed func(string) bool) *Violation {
	var bad []string
	for _, s := range podSC(spec).Sysctls {
		if !allowed(s.Name) {
			bad = append(bad, s.Name)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return &Violation{Reason: "forbidden sysctls", Detail: strings.Join(bad, ", ")}
}

func checkWindowsHostProcess(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
	hostProcess := func(w *corev1.WindowsSecurityContextOptions) bool {
		return w != nil && w.HostProcess != nil && *w.HostProcess
	}
	var setters []string
	if hostProcess(podSC(spec).WindowsOptions) {
		setters = append(setters, "pod")
	}
	bad := containersWhere(spec, func(sc *corev1.SecurityContext, _ *corev1.Container) bool {
		return sc != nil && hostProcess(sc.WindowsOptions)
	})
	if len(bad) > 0 {
		setters = append(setters, containersPhrase(bad))
	}
	if len(setters) == 0 {
		return nil
	}
	return &Violation{Reason: "hostProcess", Detail: strings.Join(setters, " and ") + " must not set securityContext.windowsOptions.hostProcess=true"}
}

func checkAllowPrivilegeEscalation(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
	// Windows pods have no such setting.
	if spec.OS != nil && spec.OS.Name == corev1.Windows {
		return nil
	}
	bad := containersWhere(spec, func(sc *corev1.SecurityContext, _ *corev1.Container) bool {
		return sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation
	})
	if len(bad) == 0 {
		return nil
	}
	return &Violation{Reason: "allowPrivilegeEscalation != false", Detail: containersPhrase(bad) + " must set securityContext.allowPrivilegeEscalation=false"}
}

// allowedVolumeTypes are the restricted level's volume sources.
func restrictedVolumeType(v *corev1.Volume) string {
	vs := v.VolumeSource
	switch {
	case vs.ConfigMap != nil, vs.CSI != nil, vs.DownwardAPI != nil, vs.EmptyDir != nil, vs.Ephemeral != nil, vs.Image != nil,
		vs.PersistentVolumeClaim != nil, vs.Projected != nil, vs.Secret != nil:
		return ""
	case vs.HostPath != nil:
		return "hostPath"
	case vs.GCEPersistentDisk != nil:
		return "gcePersistentDisk"
	case vs.AWSElasticBlockStore != nil:
		return "awsElasticBlockStore"
	case vs.GitRepo != nil:
		return "gitRepo"
	case vs.NFS != nil:
		return "nfs"
	case vs.ISCSI != nil:
		return "iscsi"
	case vs.Glusterfs != nil:
		return "glusterfs"
	case vs.RBD != nil:
		return "rbd"
	case vs.FlexVolume != nil:
		return "flexVolume"
	case vs.Cinder != nil:
		return "cinder"
	case vs.CephFS != nil:
		return "cephfs"
	case vs.Flocker != nil:
		return "flocker"
	case vs.FC != nil:
		return "fc"
	case vs.AzureFile != nil:
		return "azureFile"
	case vs.VsphereVolume != nil:
		return "vsphereVolume"
	case vs.Quobyte != nil:
		return "quobyte"
	case vs.AzureDisk != nil:
		return "azureDisk"
	case vs.PhotonPersistentDisk != nil:
		return "photonPersistentDisk"
	case vs.PortworxVolume != nil:
		return "portworxVolume"
	case vs.ScaleIO != nil:
		return "scaleIO"
	case vs.StorageOS != nil:
		return "storageos"
	}
	return "unknown"
}

func checkRestrictedVolumes(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
	types := sortedSet{}
	var bad []string
	for i := range spec.Volumes {
		if t := restrictedVolumeType(&spec.Volumes[i]); t != "" {
			bad = append(bad, spec.Volumes[i].Name)
			types.add(t)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	list := types.list()
	return &Violation{Reason: "restricted volume types", Detail: fmt.Sprintf("%s %s %s %s %s", plural("volume", "volumes", len(bad)), quoted(bad),
		plural("uses", "use", len(bad)), plural("restricted volume type", "restricted volume types", len(list)), quoted(list))}
}

func checkRunAsNonRoot(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
	if userNamespaced(spec) {
		return nil
	}
	var setters []string
	podNonRoot := false
	if v := podSC(spec).RunAsNonRoot; v != nil {
		if *v {
			podNonRoot = true
		} else {
			setters = append(setters, "pod")
		}
	}
	var explicit, implicit []string
	eachContainer(spec, func(name string, sc *corev1.SecurityContext, _ *corev1.Container) {
		switch {
		case sc != nil && sc.RunAsNonRoot != nil:
			if !*sc.RunAsNonRoot {
				explicit = append(explicit, name)
			}
		case !podNonRoot:
			implicit = append(implicit, name)
		}
	})
	if len(explicit) > 0 {
		setters = append(setters, containersPhrase(explicit))
	}
	if len(setters) > 0 {
		return &Violation{Reason: "runAsNonRoot != true", Detail: strings.Join(setters, " and ") + " must not set securityContext.runAsNonRoot=false"}
	}
	if len(implicit) > 0 {
		return &Violation{Reason: "runAsNonRoot != true", Detail: "pod or " + containersPhrase(implicit) + " must set securityContext.runAsNonRoot=true"}
	}
	return nil
}

func checkRunAsUser(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *Violation {
	if userNamespaced(spec) {
		return nil
	}
	var setters []string
	if u := podSC(spec).RunAsUser; u != nil && *u == 0 {
		setters = append(setters, "pod")
	}
	bad := containersWhere(spec, func(sc *corev1.SecurityContext, _ *corev1.Container) bool {
		return sc != nil && sc.RunAsUser != nil && *sc.RunAsUser == 0
	})
	if len(bad) > 0 {
		setters = append(setters, containersPhrase(bad))
	}
	if len(setters) == 0 {
		return nil
	}
	return &Violation{Reason: "runAsUser=0", Detail: strings.Join(setters, " and ") + " must not set runAsUser=0"}
}
