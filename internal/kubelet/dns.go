package kubelet

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Limits Kubernetes puts on a pod's resolv.conf (glibc reads at most three
// nameservers; the search line limits are the API's expanded DNS config).
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
	maxDNSSearchPathChars = 253
	// systemdResolvConf lists the real upstream servers on a host whose
	// /etc/resolv.conf points at systemd-resolved's local stub.
	systemdResolvConf = "/run/systemd/resolve/resolv.conf"
)

// resolvConf is what a resolv.conf says.
type resolvConf struct {
	servers, searches, options []string
}

// parseResolvConf reads a resolv.conf as Kubernetes' kubelet does:
// nameservers accumulate, the last search and options lines win, and search
// domains lose a trailing dot (so "a." and "a" count once).
func parseResolvConf(data string) resolvConf {
	var rc resolvConf
	for _, line := range strings.Split(data, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "nameserver":
			rc.servers = append(rc.servers, fields[1])
		case "search":
			rc.searches = nil
			for _, s := range fields[1:] {
				rc.searches = append(rc.searches, strings.TrimSuffix(s, "."))
			}
		case "options":
			rc.options = slices.Clone(fields[1:])
		}
	}
	return rc
}

// dnsEvent is a warning to record on the pod about its DNS settings.
type dnsEvent struct{ reason, message string }

// podDNSConfig decides a pod's resolv.conf from its dnsPolicy and dnsConfig,
// as Kubernetes' kubelet does:
//   - ClusterFirst (or empty) without hostNetwork, and ClusterFirstWithHostNet:
//     the cluster DNS servers only, the cluster search domains
//     (<ns>.svc.<domain> svc.<domain> <domain>) then the host's, ndots:5;
//     with no cluster DNS it falls back to Default with a MissingClusterDNS
//     warning;
//   - Default (and ClusterFirst with hostNetwork): the host's resolv.conf;
//   - None: nothing but the pod's dnsConfig.
//
// The pod's dnsConfig is then merged in (nameservers and searches appended
// without duplicates, options by name, the pod's winning) and the result cut
// to the resolver's limits, each cut reported as a DNSConfigForming warning.
func podDNSConfig(pod *corev1.Pod, clusterDNS []string, clusterDomain string, host resolvConf) (*runtimeapi.DNSConfig, []dnsEvent) {
	var events []dnsEvent
	cfg := &runtimeapi.DNSConfig{Servers: slices.Clone(host.servers), Searches: slices.Clone(host.searches), Options: slices.Clone(host.options)}
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = corev1.DNSClusterFirst
	}
	cluster := policy == corev1.DNSClusterFirstWithHostNet || (policy == corev1.DNSClusterFirst && !pod.Spec.HostNetwork)
	switch {
	case policy == corev1.DNSNone:
		cfg = &runtimeapi.DNSConfig{}
	case cluster && len(clusterDNS) > 0:
		cfg.Servers = slices.Clone(clusterDNS)
		if clusterDomain != "" {
			cfg.Searches = omitDuplicates(append([]string{pod.Namespace + ".svc." + clusterDomain, "svc." + clusterDomain, clusterDomain}, host.searches...))
		}
		cfg.Options = []string{"ndots:5"}
	case cluster:
		events = append(events, dnsEvent{"MissingClusterDNS", fmt.Sprintf(
			"pod: %q. kubelet has no cluster DNS server to use and cannot create Pod using %q policy. Falling back to %q policy.",
			podDescription(pod), corev1.DNSClusterFirst, corev1.DNSDefault)})
	}
	if extra := pod.Spec.DNSConfig; extra != nil {
		cfg.Servers = omitDuplicates(append(cfg.Servers, extra.Nameservers...))
		cfg.Searches = omitDuplicates(append(cfg.Searches, extra.Searches...))
		for _, o := range extra.Options {
			opt := o.Name
			if o.Value != nil && *o.Value != "" {
				opt += ":" + *o.Value
			}
			cfg.Options = mergeDNSOption(cfg.Options, opt)
		}
	}
	if len(cfg.Servers) > maxDNSNameservers {
		cfg.Servers = cfg.Servers[:maxDNSNameservers]
		events = append(events, dnsEvent{"DNSConfigForming", "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: " + strings.Join(cfg.Servers, " ")})
	}
	var cut bool
	if cfg.Searches, cut = fitSearchLimits(cfg.Searches); cut {
		events = append(events, dnsEvent{"DNSConfigForming", "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(cfg.Searches, " ")})
	}
	return cfg, events
}

// fitSearchLimits keeps the first 32 search domains, drops those longer than
// 253 characters (some resolvers abort on them), then drops domains from the
// end until the line fits in 2048 characters.
func fitSearchLimits(searches []string) ([]string, bool) {
	cut := false
	if len(searches) > maxDNSSearchPaths {
		searches, cut = searches[:maxDNSSearchPaths], true
	}
	kept := searches[:0:0]
	for _, s := range searches {
		if len(s) > maxDNSSearchPathChars {
			cut = true
			continue
		}
		kept = append(kept, s)
	}
	for len(kept) > 0 && len(strings.Join(kept, " ")) > maxDNSSearchListChars {
		kept, cut = kept[:len(kept)-1], true
	}
	return kept, cut
}

func omitDuplicates(in []string) []string {
	var out []string
	for _, s := range in {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// mergeDNSOption sets option opt ("name" or "name:value"), replacing an
// option of the same name.
func mergeDNSOption(options []string, opt string) []string {
	name, _, _ := strings.Cut(opt, ":")
	for i, existing := range options {
		if n, _, _ := strings.Cut(existing, ":"); n == name {
			options[i] = opt
			return options
		}
	}
	return append(options, opt)
}

// servedClusterDNS returns the configured cluster DNS addresses that a
// Service answers on. Until something serves cluster DNS, sending pods to an
// address nobody answers would break every name lookup, external ones
// included; with none served the pod gets what upstream gives when no
// cluster DNS is configured: the node's resolv.conf (policy Default).
func (k *Kubelet) servedClusterDNS() []string {
	if len(k.cfg.ClusterDNS) == 0 || k.services == nil {
		return nil
	}
	services, err := k.services.List(labels.Everything())
	if err != nil {
		return nil
	}
	served := map[string]bool{}
	for _, svc := range services {
		for _, ip := range append([]string{svc.Spec.ClusterIP}, svc.Spec.ClusterIPs...) {
			if addr, err := netip.ParseAddr(ip); err == nil {
				served[addr.String()] = true
			}
		}
	}
	var out []string
	for _, ip := range k.cfg.ClusterDNS {
		if addr, err := netip.ParseAddr(ip); err == nil && served[addr.String()] {
			out = append(out, ip)
		}
	}
	return out
}

// podDNS computes the pod's DNS settings from the node's resolv.conf.
func (k *Kubelet) podDNS(pod *corev1.Pod) (*runtimeapi.DNSConfig, []dnsEvent) {
	var host resolvConf
	if data, err := os.ReadFile(k.cfg.ResolvConf); err == nil {
		host = parseResolvConf(string(data))
	} else {
		k.log.Warn("read node resolv.conf", "path", k.cfg.ResolvConf, "err", err)
	}
	return podDNSConfig(pod, k.servedClusterDNS(), k.cfg.ClusterDomain, host)
}

// defaultResolvConf picks the resolv.conf pods with policy Default get: the
// node's, unless it only points at systemd-resolved's loopback stub, which a
// pod cannot reach; then the file with the servers the stub forwards to.
func defaultResolvConf() string {
	data, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return "/etc/resolv.conf"
	}
	rc := parseResolvConf(string(data))
	loopbackOnly := len(rc.servers) > 0
	for _, s := range rc.servers {
		if addr, err := netip.ParseAddr(s); err != nil || !addr.IsLoopback() {
			loopbackOnly = false
		}
	}
	if _, err := os.Stat(systemdResolvConf); loopbackOnly && err == nil {
		return systemdResolvConf
	}
	return "/etc/resolv.conf"
}
