package kubelet

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestParseResolvConf(t *testing.T) {
	rc := parseResolvConf(`# comment
; other comment
nameserver 10.0.0.1
search first.example
search example.com. corp.example
nameserver 10.0.0.2
options ndots:2
options timeout:1 rotate
nameserver
`)
	if !slices.Equal(rc.servers, []string{"10.0.0.1", "10.0.0.2"}) || !slices.Equal(rc.searches, []string{"example.com", "corp.example"}) ||
		!slices.Equal(rc.options, []string{"timeout:1", "rotate"}) {
		t.Errorf("parsed = %+v", rc)
	}
}

func TestPodDNSConfig(t *testing.T) {
	host := resolvConf{servers: []string{"192.0.2.53"}, searches: []string{"corp.example"}, options: []string{"timeout:2"}}
	cluster := []string{"10.43.0.10"}
	pod := func(policy corev1.DNSPolicy, hostNet bool, extra *corev1.PodDNSConfig) *corev1.Pod {
		p := makePod("web").obj()
		p.Namespace = "shop"
		p.Spec.DNSPolicy, p.Spec.HostNetwork, p.Spec.DNSConfig = policy, hostNet, extra
		return p
	}
	clusterSearches := []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"}
	for _, tc := range []struct {
		name                       string
		pod                        *corev1.Pod
		clusterDNS                 []string
		servers, searches, options []string
		events                     []string
	}{
		{"cluster first", pod(corev1.DNSClusterFirst, false, nil), cluster, cluster, clusterSearches, []string{"ndots:5"}, nil},
		{"empty policy is cluster first", pod("", false, nil), cluster, cluster, clusterSearches, []string{"ndots:5"}, nil},
		{"cluster first on host network is default", pod(corev1.DNSClusterFirst, true, nil), cluster, host.servers, host.searches, host.options, nil},
		{"cluster first with host net", pod(corev1.DNSClusterFirstWithHostNet, true, nil), cluster, cluster, clusterSearches, []string{"ndots:5"}, nil},
		{"default", pod(corev1.DNSDefault, false, nil), cluster, host.servers, host.searches, host.options, nil},
		{"no cluster DNS falls back to default", pod(corev1.DNSClusterFirst, false, nil), nil, host.servers, host.searches, host.options, []string{"MissingClusterDNS"}},
		{"none", pod(corev1.DNSNone, false, &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"a.example"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("1")}, {Name: "edns0"}}}),
			cluster, []string{"1.1.1.1"}, []string{"a.example"}, []string{"ndots:1", "edns0"}, nil},
		{"none without config", pod(corev1.DNSNone, false, nil), cluster, nil, nil, nil, nil},
		{"cluster first merged with dnsConfig", pod(corev1.DNSClusterFirst, false, &corev1.PodDNSConfig{
			Nameservers: []string{"10.43.0.10", "1.1.1.1"}, Searches: []string{"cluster.local", "b.example"},
			Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "single-request-reopen"}},
		}), cluster, []string{"10.43.0.10", "1.1.1.1"}, append(slices.Clone(clusterSearches), "b.example"), []string{"ndots:2", "single-request-reopen"}, nil},
		{"default merged with dnsConfig", pod(corev1.DNSDefault, false, &corev1.PodDNSConfig{Options: []corev1.PodDNSConfigOption{{Name: "timeout", Value: ptr.To("5")}}}),
			cluster, host.servers, host.searches, []string{"timeout:5"}, nil},
		{"nameserver limit", pod(corev1.DNSClusterFirst, false, &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "8.8.8.8", "9.9.9.9"}}),
			cluster, []string{"10.43.0.10", "1.1.1.1", "8.8.8.8"}, clusterSearches, []string{"ndots:5"}, []string{"DNSConfigForming"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, events := podDNSConfig(tc.pod, tc.clusterDNS, "cluster.local", host)
			if !slices.Equal(cfg.Servers, tc.servers) || !slices.Equal(cfg.Searches, tc.searches) || !slices.Equal(cfg.Options, tc.options) {
				t.Errorf("config = %+v, want servers %v searches %v options %v", cfg, tc.servers, tc.searches, tc.options)
			}
			var reasons []string
			for _, e := range events {
				reasons = append(reasons, e.reason)
			}
			if !slices.Equal(reasons, tc.events) {
				t.Errorf("events = %+v, want %v", events, tc.events)
			}
		})
	}
}

func TestPodDNSConfigDoesNotChangeHost(t *testing.T) {
	host := resolvConf{servers: []string{"192.0.2.53"}, options: []string{"timeout:2"}}
	p := makePod("web").obj()
	p.Spec.DNSPolicy = corev1.DNSDefault
	p.Spec.DNSConfig = &corev1.PodDNSConfig{Options: []corev1.PodDNSConfigOption{{Name: "timeout", Value: ptr.To("5")}}}
	podDNSConfig(p, nil, "cluster.local", host)
	if host.options[0] != "timeout:2" {
		t.Errorf("host options changed: %v", host.options)
	}
}

func TestFitSearchLimits(t *testing.T) {
	many := make([]string, 40)
	for i := range many {
		many[i] = fmt.Sprintf("d%d.example", i)
	}
	long := strings.Repeat("a", 254)
	wide := make([]string, 10)
	for i := range wide {
		wide[i] = fmt.Sprintf("%d%s", i, strings.Repeat("x", 249)) // 250 characters each
	}
	for _, tc := range []struct {
		name string
		in   []string
		want int
		cut  bool
	}{
		{"fits", many[:5], 5, false},
		{"too many", many, 32, true},
		{"too long a domain", []string{"a.example", long, "b.example"}, 2, true},
		{"line too long", wide, 8, true}, // 8*250+7 = 2007 <= 2048, 9 domains are 2258
	} {
		got, cut := fitSearchLimits(slices.Clone(tc.in))
		if len(got) != tc.want || cut != tc.cut || slices.Contains(got, long) {
			t.Errorf("%s: fitSearchLimits = %d domains, cut %v; want %d, %v", tc.name, len(got), cut, tc.want, tc.cut)
		}
	}
}

func TestHostsFiles(t *testing.T) {
	localhost := "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"
	aliases := []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo.local", "bar.local"}}, {IP: "10.1.2.4", Hostnames: []string{"baz"}}}
	aliasLines := "\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n10.1.2.4\tbaz\n"
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"plain", managedHostsFile([]string{"10.42.0.5"}, "web", "", nil), localhost + "10.42.0.5\tweb\n"},
		{"subdomain and dual stack", managedHostsFile([]string{"10.42.0.5", "fd00::5"}, "web-0", "nginx.shop.svc.cluster.local", nil),
			localhost + "10.42.0.5\tweb-0.nginx.shop.svc.cluster.local\tweb-0\nfd00::5\tweb-0.nginx.shop.svc.cluster.local\tweb-0\n"},
		{"aliases", managedHostsFile([]string{"10.42.0.5"}, "web", "", aliases), localhost + "10.42.0.5\tweb\n" + aliasLines},
		{"host network", hostNetworkHostsFile([]byte("127.0.0.1 localhost\n"), aliases), "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n" + aliasLines},
	} {
		if string(tc.got) != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.name, tc.got, tc.want)
		}
	}
}

func TestPodHostnameAndDomain(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b"
	for _, tc := range []struct {
		name, hostname, subdomain string
		fqdn                      bool
		wantHost, wantDomain      string
		wantSandbox               string
	}{
		{"web", "", "", false, "web", "", "web"},
		{"web-0", "", "nginx", false, "web-0", "nginx.shop.svc.cluster.local", "web-0"},
		{"web-0", "db", "nginx", true, "db", "nginx.shop.svc.cluster.local", "db.nginx.shop.svc.cluster.local"},
		{"web", "", "", true, "web", "", "web"},
		{long, "", "", false, strings.Repeat("a", 62), "", strings.Repeat("a", 62)},
	} {
		p := makePod(tc.name).obj()
		p.Namespace = "shop"
		p.Spec.Hostname, p.Spec.Subdomain, p.Spec.SetHostnameAsFQDN = tc.hostname, tc.subdomain, ptr.To(tc.fqdn)
		host, domain := podHostnameAndDomain(p, "cluster.local")
		if host != tc.wantHost || domain != tc.wantDomain || sandboxHostname(p, "cluster.local") != tc.wantSandbox {
			t.Errorf("%s: got %q %q %q", tc.name, host, domain, sandboxHostname(p, "cluster.local"))
		}
	}
}

func TestEtcHostsMounted(t *testing.T) {
	h := newHarness(t, nil)
	p := makePod("hosted").obj()
	p.Spec.Subdomain = "svc"
	p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.9.9.9", Hostnames: []string{"alias.example"}}}
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "own", Image: testImage, ImagePullPolicy: corev1.PullIfNotPresent,
		VolumeMounts: []corev1.VolumeMount{{Name: "hosts", MountPath: "/etc/hosts"}}})
	p.Spec.Volumes = []corev1.Volume{{Name: "hosts", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	h.create(p)
	pod := h.waitPod("default", "hosted", "running", podRunning)
	mountsHosts := func(name string) (string, bool) {
		cfg := h.runtime.ContainerConfig(h.runtime.RunningContainer("uid-hosted", name))
		hosts := ""
		for _, m := range cfg.Mounts {
			if m.ContainerPath == "/etc/hosts" {
				if hosts != "" {
					t.Errorf("%s: /etc/hosts mounted twice", name)
				}
				hosts = m.HostPath
			}
		}
		return hosts, hosts != ""
	}
	file, ok := mountsHosts("app")
	if !ok {
		t.Fatal("app container has no /etc/hosts mount")
	}
	if own, _ := mountsHosts("own"); strings.HasSuffix(own, "etc-hosts") {
		t.Errorf("container with its own /etc/hosts got the kubelet's: %s", own)
	}
	data, err := readFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s\thosted.svc.default.svc.cluster.local\thosted\n", pod.Status.PodIP)
	if !strings.HasPrefix(data, "# Kubernetes-managed hosts file.\n") || !strings.Contains(data, want) || !strings.Contains(data, "10.9.9.9\talias.example\n") {
		t.Errorf("hosts file:\n%s\nwant line %q", data, want)
	}
}

func readFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	return string(data), err
}
