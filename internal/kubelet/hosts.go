package kubelet

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	etcHostsPath = "/etc/hosts"
	// Headers of the hosts files the kubelet writes, as Kubernetes' kubelet
	// writes them (tools look for them).
	managedHostsHeader            = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
	maxHostnameLength             = 63
)

// podHostnameAndDomain returns the pod's hostname (spec.hostname, else its
// name, cut to 63 characters without a trailing '-' or '.') and, when
// spec.subdomain is set, its domain <subdomain>.<namespace>.svc.<cluster-domain>.
func podHostnameAndDomain(pod *corev1.Pod, clusterDomain string) (string, string) {
	name := pod.Name
	if pod.Spec.Hostname != "" {
		name = pod.Spec.Hostname
	}
	if len(name) > maxHostnameLength {
		name = strings.TrimRight(name[:maxHostnameLength], "-.")
	}
	domain := ""
	if pod.Spec.Subdomain != "" {
		domain = fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return name, domain
}

// sandboxHostname is the hostname the pod's UTS namespace gets: its hostname,
// or its fully qualified name when setHostnameAsFQDN asks for it.
func sandboxHostname(pod *corev1.Pod, clusterDomain string) string {
	name, domain := podHostnameAndDomain(pod, clusterDomain)
	if pod.Spec.SetHostnameAsFQDN != nil && *pod.Spec.SetHostnameAsFQDN && domain != "" {
		return name + "." + domain
	}
	return name
}

// managedHostsFile is the /etc/hosts of a pod with its own network: the
// localhost entries, the pod's IPs with its hostname (fully qualified first
// when it has a subdomain), then the pod's hostAliases.
func managedHostsFile(podIPs []string, hostname, domain string, aliases []corev1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(managedHostsHeader)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range podIPs {
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	b.Write(hostAliasEntries(aliases))
	return b.Bytes()
}

// hostNetworkHostsFile is the /etc/hosts of a host-network pod: the node's
// own hosts file plus the pod's hostAliases.
func hostNetworkHostsFile(nodeHosts []byte, aliases []corev1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(managedHostsHeaderHostNetwork)
	b.Write(nodeHosts)
	b.Write(hostAliasEntries(aliases))
	return b.Bytes()
}

func hostAliasEntries(aliases []corev1.HostAlias) []byte {
	if len(aliases) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
}

// mountsOwnEtcHosts reports whether a container mounts a volume at
// /etc/hosts: then the kubelet leaves the file to it.
func mountsOwnEtcHosts(c *corev1.Container) bool {
	for _, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) == etcHostsPath {
			return true
		}
	}
	return false
}

// etcHostsMount writes the pod's hosts file (once the pod has an IP: before
// that there is nothing to map its hostname to, and upstream mounts none
// either) and returns its mount for container c, or nil.
func (k *Kubelet) etcHostsMount(pod *corev1.Pod, c *corev1.Container, podIPs []string) (*runtimeapi.Mount, error) {
	if len(podIPs) == 0 || mountsOwnEtcHosts(c) {
		return nil, nil
	}
	var content []byte
	if pod.Spec.HostNetwork {
		nodeHosts, err := os.ReadFile(etcHostsPath)
		if err != nil {
			return nil, fmt.Errorf("hosts file: %w", err)
		}
		content = hostNetworkHostsFile(nodeHosts, pod.Spec.HostAliases)
	} else {
		hostname, domain := podHostnameAndDomain(pod, k.cfg.ClusterDomain)
		content = managedHostsFile(podIPs, hostname, domain, pod.Spec.HostAliases)
	}
	file := filepath.Join(k.podDataDir(pod.UID), "etc-hosts")
	if err := writeFileIfChanged(file, content, 0o644); err != nil {
		return nil, fmt.Errorf("hosts file: %w", err)
	}
	return &runtimeapi.Mount{ContainerPath: etcHostsPath, HostPath: file}, nil
}

// writeFileIfChanged writes data to path in place: the file is bind-mounted
// into running containers, and replacing it (a rename) would leave them the
// old inode.
func writeFileIfChanged(path string, data []byte, mode os.FileMode) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, mode)
}
