package cluster

import (
	"context"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"net"
	"net/netip"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/apiserver/local"
	"github.com/skiff-sh/skiff/internal/authz/bootstrappolicy"
	"github.com/skiff-sh/skiff/internal/controller/dnsendpoints"
	"github.com/skiff-sh/skiff/internal/dns"
)

// dnsPort is where every worker's cluster DNS answers (UDP and TCP) on the node's address;
// hostResolvConf lists the resolvers it forwards other names to (unless --dns-upstream is set).
const (
	dnsPort        = 53
	hostResolvConf = "/etc/resolv.conf"
)

// kubeDNSService is the kube-dns Service at the first cluster DNS address, as Kubernetes
// distributions have it: selectorless (the dns-endpoints controller writes one endpoint per
// worker node) and internalTrafficPolicy Local, so that each node's proxy sends a pod's queries
// to its own node's DNS. ok is false when that address is not in the service range (a
// --cluster-dns pointing elsewhere): then nothing is created.
func kubeDNSService(cfg *Config) (*corev1.Service, bool) {
	if len(cfg.ClusterDNS) == 0 {
		return nil, false
	}
	ip, err := netip.ParseAddr(cfg.ClusterDNS[0])
	if err != nil {
		return nil, false
	}
	prefix, err := netip.ParsePrefix(cfg.ServiceCIDR)
	if err != nil || !prefix.Contains(ip) {
		return nil, false
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: dnsendpoints.ServiceName, Namespace: dnsendpoints.ServiceNamespace, Labels: map[string]string{
			"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "KubeDNS"}},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: ip.String(),
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: dnsPort, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(dnsPort)},
				{Name: "dns-tcp", Port: dnsPort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(dnsPort)},
			},
			InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyLocal),
		},
	}, true
}

// ensureKubeDNSService creates the kube-dns Service if it is missing (bootstrap, with the
// "kubernetes" Service).
func ensureKubeDNSService(ctx context.Context, srv *apiserver.Server, cfg *Config) error {
	svc, ok := kubeDNSService(cfg)
	if !ok {
		cfg.Logger.Info("cluster DNS address is outside the service range; no kube-dns Service created",
			"cluster-dns", cfg.ClusterDNS, "service-cidr", cfg.ServiceCIDR)
		return nil
	}
	return srv.EnsureObject(ctx, schema.GroupResource{Resource: "services"}, svc)
}

// dnsAddress is where this worker's DNS listens: its advertise address, port 53. A node that
// advertises loopback (a single-host test node) serves no DNS: pods cannot reach it there and
// several such nodes on one host would fight over 127.0.0.1:53.
func dnsAddress(cfg *Config) (string, bool) {
	ip, err := netip.ParseAddr(cfg.AdvertiseAddress)
	if err != nil || ip.IsLoopback() || ip.IsUnspecified() {
		return "", false
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(dnsPort)), true
}

// runDNS serves cluster DNS on this worker with its own identity (system:skiff:dns); inProcess
// (nil without the API server in this process) gives it informers on the API server's watch cache.
func runDNS(ctx context.Context, cfg *Config, metrics *componentMetrics, now time.Time, inProcess *local.Informers) error {
	if _, ok := dnsAddress(cfg); !ok {
		cfg.Logger.Info("node advertises a loopback address; cluster DNS not served", "advertise-address", cfg.AdvertiseAddress)
		return nil
	}
	restCfg, err := componentRESTConfig(cfg, bootstrappolicy.SkiffDNS, nil, now)
	if err != nil {
		return err
	}
	return runDNSAs(ctx, cfg, metrics.fresh("dns"), restCfg, inProcess)
}

// runDNSAs serves cluster DNS with the given client configuration: a joined worker runs it as its
// node (system:nodes is bound to the DNS server's role, see JoinClusterRoleBindings).
func runDNSAs(ctx context.Context, cfg *Config, reg prometheus.Registerer, restCfg *rest.Config, inProcess *local.Informers) error {
	log := cfg.Logger.With("component", "dns")
	addr, ok := dnsAddress(cfg)
	if !ok {
		log.Info("node advertises a loopback address; cluster DNS not served", "advertise-address", cfg.AdvertiseAddress)
		return nil
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("dns client: %w", err)
	}
	upstreams := cfg.DNSUpstreams
	if len(upstreams) == 0 {
		// The host's resolvers, loopback stubs included: this server runs in the host's network.
		all, err := dns.UpstreamsFromResolvConf(hostResolvConf)
		if err != nil {
			log.Warn("cluster DNS forwards nothing", "err", err)
		}
		for _, u := range all {
			if u != addr { // a host pointed at its own cluster DNS would loop
				upstreams = append(upstreams, u)
			}
		}
	}
	dnsCfg := dns.Config{
		Addr: addr, Domain: cfg.ClusterDomain, Upstreams: upstreams, Client: client,
		Clock: clock.RealClock{}, Logger: log, Registerer: reg,
	}
	if inProcess != nil {
		dnsCfg.PrepareInformers = inProcess.Register
	}
	return dns.Run(ctx, dnsCfg)
}
