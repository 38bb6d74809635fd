package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// podFilesPods are the pods of TestKubeletPodFilesAndAdmission; NODE is the node's name, so the
// hostPort pods reach the kubelet without the scheduler (as a scheduler race would bind them).
const podFilesPods = `apiVersion: v1
kind: Pod
metadata: {name: hosts}
spec:
  terminationGracePeriodSeconds: 1
  hostname: web-0
  subdomain: nginx
  hostAliases:
  - {ip: 10.9.8.7, hostnames: [alias-one.example, alias-two.example]}
  initContainers:
  - {name: setup, image: localhost/busybox:local, command: ["true"]}
  containers:
  - {name: c, image: localhost/busybox:local, command: [sleep, inf]}
---
apiVersion: v1
kind: Pod
metadata: {name: dns-none}
spec:
  terminationGracePeriodSeconds: 1
  dnsPolicy: None
  dnsConfig:
    nameservers: [192.0.2.53]
    searches: [one.example, two.example]
    options: [{name: ndots, value: "2"}, {name: edns0}]
  containers:
  - {name: c, image: localhost/busybox:local, command: [sleep, inf]}
---
apiVersion: v1
kind: Pod
metadata: {name: fsgroup}
spec:
  terminationGracePeriodSeconds: 1
  securityContext: {runAsUser: 1000, runAsGroup: 1000, fsGroup: 2000}
  containers:
  - name: c
    image: localhost/busybox:local
    command: [sleep, inf]
    volumeMounts:
    - {name: secret, mountPath: /secret}
    - {name: scratch, mountPath: /scratch}
  volumes:
  - {name: secret, secret: {secretName: fsgroup-secret, defaultMode: 0400}}
  - {name: scratch, emptyDir: {}}
---
apiVersion: v1
kind: Secret
metadata: {name: fsgroup-secret}
stringData: {token: readable-by-the-group}
---
apiVersion: v1
kind: Pod
metadata: {name: safe-sysctl}
spec:
  terminationGracePeriodSeconds: 1
  securityContext:
    sysctls: [{name: net.ipv4.ip_local_port_range, value: "32768 60998"}]
  containers:
  - {name: c, image: localhost/busybox:local, command: [sleep, inf]}
---
apiVersion: v1
kind: Pod
metadata: {name: unsafe-sysctl}
spec:
  securityContext:
    sysctls: [{name: kernel.msgmax, value: "10000"}]
  containers:
  - {name: c, image: localhost/busybox:local, command: [sleep, inf]}
---
apiVersion: v1
kind: Pod
metadata: {name: port-first}
spec:
  terminationGracePeriodSeconds: 1
  nodeName: NODE
  containers:
  - {name: c, image: localhost/busybox:local, command: [sleep, inf], ports: [{containerPort: 80, hostPort: 31999}]}
`

const portSecond = `apiVersion: v1
kind: Pod
metadata: {name: port-second}
spec:
  nodeName: NODE
  containers:
  - {name: c, image: localhost/busybox:local, command: [sleep, inf], ports: [{containerPort: 80, hostPort: 31999}]}
`

// TestKubeletPodFilesAndAdmission checks what the conformance suite found missing (issue 12) and
// the pod's name files (issue 9) on real containers: the kubelet's /etc/hosts and resolv.conf,
// completed init containers reported ready, fsGroup on volumes, and admission refusing unsafe
// sysctls and a taken hostPort.
func TestKubeletPodFilesAndAdmission(t *testing.T) {
	c := newWorkerCluster(t)
	node := strings.TrimPrefix(strings.TrimSpace(c.kubectl("get", "nodes", "-o", "name")), "node/")
	c.stdin(strings.ReplaceAll(podFilesPods, "NODE", node), "apply", "-f", "-")
	waitRunning(t, c, "hosts", "dns-none", "fsgroup", "safe-sysctl", "port-first")
	c.stdin(strings.ReplaceAll(portSecond, "NODE", node), "apply", "-f", "-")

	t.Run("etc-hosts", func(t *testing.T) {
		pod := getPod(t, c, "hosts")
		hosts := c.kubectl("exec", "hosts", "-c", "c", "--", "cat", "/etc/hosts")
		mustContain(t, hosts, "# Kubernetes-managed hosts file.\n", "127.0.0.1\tlocalhost\n", "::1\tlocalhost ip6-localhost ip6-loopback\n",
			fmt.Sprintf("%s\tweb-0.nginx.default.svc.cluster.local\tweb-0\n", pod.Status.PodIP),
			"# Entries added by HostAliases.\n10.9.8.7\talias-one.example\talias-two.example\n")
		if got := strings.TrimSpace(c.kubectl("exec", "hosts", "-c", "c", "--", "hostname")); got != "web-0" {
			t.Errorf("hostname = %q", got)
		}
	})

	t.Run("resolv.conf", func(t *testing.T) {
		none := c.kubectl("exec", "dns-none", "--", "cat", "/etc/resolv.conf")
		mustContain(t, none, "nameserver 192.0.2.53", "search one.example two.example", "ndots:2", "edns0")
		mustNotContain(t, none, "cluster.local")

		// The control plane creates the kube-dns Service at the cluster DNS address from the start,
		// so ClusterFirst pods use it.
		c.kubectl("run", "dns-cluster", "--image=localhost/busybox:local", "--", "sleep", "inf")
		waitRunning(t, c, "dns-cluster")
		cluster := c.kubectl("exec", "dns-cluster", "--", "cat", "/etc/resolv.conf")
		mustContain(t, cluster, "nameserver 10.43.0.10", "search default.svc.cluster.local svc.cluster.local cluster.local", "options ndots:5")
	})

	t.Run("init-container-ready", func(t *testing.T) {
		pod := getPod(t, c, "hosts")
		if len(pod.Status.InitContainerStatuses) != 1 || !pod.Status.InitContainerStatuses[0].Ready ||
			pod.Status.InitContainerStatuses[0].State.Terminated == nil {
			t.Errorf("init container status = %+v", pod.Status.InitContainerStatuses)
		}
	})

	t.Run("fsgroup", func(t *testing.T) {
		if got := strings.TrimSpace(c.kubectl("exec", "fsgroup", "--", "cat", "/secret/token")); got != "readable-by-the-group" {
			t.Errorf("secret read by the fsGroup = %q", got)
		}
		out := c.kubectl("exec", "fsgroup", "--", "sh", "-c", "id -G && mkdir /scratch/d && echo x > /scratch/d/f && stat -c '%g %a' /scratch /scratch/d/f")
		mustContain(t, out, "2000", "2000 2777")
		if !strings.Contains(out, "\n2000 ") {
			t.Errorf("file written in the emptyDir does not inherit the fsGroup:\n%s", out)
		}
	})

	t.Run("sysctls", func(t *testing.T) {
		if got := strings.Join(strings.Fields(c.kubectl("exec", "safe-sysctl", "--", "cat", "/proc/sys/net/ipv4/ip_local_port_range")), " "); got != "32768 60998" {
			t.Errorf("safe sysctl = %q", got)
		}
		pod := waitPhase(t, c, "unsafe-sysctl", corev1.PodFailed)
		if pod.Status.Reason != "SysctlForbidden" || pod.Status.Message != `Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted` {
			t.Errorf("unsafe sysctl pod status: %q %q", pod.Status.Reason, pod.Status.Message)
		}
		out, err := c.kubectlIn(`apiVersion: v1
kind: Pod
metadata: {name: bad-sysctl}
spec:
  securityContext: {sysctls: [{name: "Kernel.Bad_", value: "1"}]}
  containers: [{name: c, image: localhost/busybox:local}]
`, "apply", "-f", "-")
		if err == nil || !strings.Contains(out, "spec.securityContext.sysctls[0].name: Invalid value") {
			t.Errorf("invalid sysctl name accepted: %v\n%s", err, out)
		}
	})

	t.Run("host-port-conflict", func(t *testing.T) {
		pod := waitPhase(t, c, "port-second", corev1.PodFailed)
		if pod.Status.Reason != "NodePorts" || !strings.Contains(pod.Status.Message, "didn't have free ports") {
			t.Errorf("second hostPort pod status: %q %q", pod.Status.Reason, pod.Status.Message)
		}
		if first := getPod(t, c, "port-first"); first.Status.Phase != corev1.PodRunning {
			t.Errorf("first hostPort pod is %s", first.Status.Phase)
		}
	})
}

func waitPhase(t *testing.T, c *cluster, name string, phase corev1.PodPhase) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	eventually(t, 60*time.Second, func() error {
		pod = getPod(t, c, name)
		if pod.Status.Phase != phase {
			return fmt.Errorf("pod %s is %s, want %s", name, pod.Status.Phase, phase)
		}
		return nil
	})
	return pod
}
