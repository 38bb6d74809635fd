package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skiff-sh/skiff/internal/pki"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiff-sh/skiff/internal/apiserver/local"
	"github.com/skiff-sh/skiff/internal/kubelet"
	"github.com/skiff-sh/skiff/internal/kubelet/containerd"
)

// kubeletRoles are the node-role.kubernetes.io/<role> labels of a node, in kubeadm's spelling for the
// control plane (the scheduler's messages and kubectl's ROLES column use it).
func kubeletRoles(roles []Role) []string {
	var out []string
	for _, r := range roles {
		switch r {
		case RoleControlPlane:
			out = append(out, "control-plane")
		default:
			out = append(out, string(r))
		}
	}
	return out
}

// firstPodCIDR is the first /24 of the cluster CIDR: the pod range of a node that registers before
// node IPAM has given it one (a single-node cluster).
func firstPodCIDR(clusterCIDR string) (string, error) {
	_, ipnet, err := net.ParseCIDR(clusterCIDR)
	if err != nil {
		return "", err
	}
	ones, bits := ipnet.Mask.Size()
	if bits != 32 || ones > 24 {
		return ipnet.String(), nil
	}
	return (&net.IPNet{IP: ipnet.IP, Mask: net.CIDRMask(24, 32)}).String(), nil
}

// runWorker runs the node's container runtime and kubelet with the node's own identity
// (CN=system:node:<name>, O=system:nodes), issued from the CA in the data dir.
func runWorker(ctx context.Context, cfg *Config, now time.Time, inProcess *local.Informers, rt *kubelet.Runtime) error {
	restCfg, err := componentRESTConfig(cfg, "system:node:"+cfg.NodeName, []string{"system:nodes"}, now)
	if err != nil {
		return err
	}
	podCIDR, err := firstPodCIDR(cfg.ClusterCIDR)
	if err != nil {
		return fmt.Errorf("cluster CIDR: %w", err)
	}
	serverTLS, err := kubeletServingTLS(cfg, now)
	if err != nil {
		return err
	}
	// The kubelet reaches the API servers through the node-local load balancer (lb.go).
	return runKubelet(ctx, cfg, kubeletIdentity{rest: throughLB(cfg, restCfg), serverTLS: serverTLS, podCIDRs: []string{podCIDR}, taints: nodeTaints(cfg.Roles), inProcess: inProcess, runtime: rt})
}

// kubeletDataDir is where the kubelet and the containerd skiff supervises for it keep their state.
func kubeletDataDir(cfg *Config) string { return filepath.Join(cfg.DataDir, "kubelet") }

// kubeletContainerd is the configuration of the containerd skiff supervises for the kubelet: its
// CNI plugins (cni.go) and OCI runtime (ociruntime.go).
func kubeletContainerd(cfg *Config) (containerd.Config, error) {
	ccfg, err := containerdForCNI(cfg, kubeletDataDir(cfg))
	if err != nil {
		return ccfg, err
	}
	return ociRuntimeForKubelet(cfg, ccfg)
}

// startKubeletRuntime starts the node's supervised containerd ahead of its kubelet, so that
// containerd's start and the pause image's import overlap the control plane's (certificates,
// etcd, the API server): on a node with every role they were about a second of the chain to
// Node Ready. Nil when the kubelet uses another runtime (--container-runtime-endpoint) or the
// node runs none.
func startKubeletRuntime(cfg *Config) (*kubelet.Runtime, error) {
	if !cfg.runsKubelet() || cfg.ContainerRuntimeEndpoint != "" {
		return nil, nil
	}
	ccfg, err := kubeletContainerd(cfg)
	if err != nil {
		return nil, err
	}
	return kubelet.StartRuntime(ccfg, kubeletDataDir(cfg), cfg.Logger)
}

// kubeletIdentity is how a kubelet reaches and is reached by the cluster.
type kubeletIdentity struct {
	rest      *rest.Config
	serverTLS *tls.Config
	// podCIDRs are registered with a new Node; empty waits for node IPAM's (a joined node).
	podCIDRs []string
	labels   map[string]string
	taints   []corev1.Taint
	// inProcess, when the API server runs in this process, serves the kubelet's pod and service
	// informers from its watch cache; writes still go through rest.
	inProcess *local.Informers
	// runtime is the supervised containerd the node started ahead of the kubelet (nil: the
	// kubelet starts its own, or uses --container-runtime-endpoint).
	runtime *kubelet.Runtime
}

// runKubelet runs the container runtime and the kubelet as id.
func runKubelet(ctx context.Context, cfg *Config, id kubeletIdentity) error {
	client, err := kubernetes.NewForConfig(id.rest)
	if err != nil {
		return err
	}
	reserved, err := kubelet.ParseSystemReserved(cfg.SystemReserved)
	if err != nil {
		return fmt.Errorf("--system-reserved: %w", err)
	}
	kcfg := kubelet.Config{
		SystemReserved:       reserved,
		PodManifestPath:      cfg.PodManifestPath,
		AllowedUnsafeSysctls: cfg.AllowedUnsafeSysctls,
		ClusterDNS:           cfg.ClusterDNS,
		ClusterDomain:        cfg.ClusterDomain,
		ResolvConf:           cfg.ResolvConf,
		CNIBridge:            cfg.CNIBridge,
		CNINetworkName:       cfg.CNIBridge,
		NodeName:             cfg.NodeName,
		// No roles: NodeRestriction forbids a kubelet node-role.kubernetes.io labels; the control
		// plane sets them (labelNodeRoles), as kubeadm does with the admin's credentials.
		Roles:    nil,
		Labels:   id.labels,
		Taints:   id.taints,
		DataDir:  kubeletDataDir(cfg),
		RootDir:  cfg.KubeletRootDir,
		PodCIDRs: id.podCIDRs,
		Port:     int32(cfg.KubeletPort),
		// Zero takes the kubelet's default.
		SyncFrequency: cfg.KubeletSyncFrequency,
	}
	if ip := net.ParseIP(cfg.AdvertiseAddress); ip != nil {
		// The node is reached where the kubelet listens: a loopback-only node says so.
		kcfg.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: cfg.AdvertiseAddress}, {Type: corev1.NodeHostName, Address: cfg.NodeName}}
	}
	if in := id.inProcess; in != nil {
		kcfg.PrepareInformers = func(pods informers.SharedInformerFactory, onThisNode func(*metav1.ListOptions), services informers.SharedInformerFactory) {
			in.Only(schema.GroupResource{Resource: "pods"}).RegisterFiltered(pods, onThisNode)
			in.Only(schema.GroupResource{Resource: "services"}).Register(services)
			cfg.Logger.Info("the kubelet's pod and service informers read the watch cache in process")
		}
	}
	kcfg = kcfg.WithDefaults()
	var ccfg containerd.Config
	if id.runtime == nil {
		if ccfg, err = kubeletContainerd(cfg); err != nil {
			return err
		}
	}
	return kubelet.RunWorker(ctx, kubelet.WorkerConfig{
		Kubelet: kcfg, RuntimeEndpoint: cfg.ContainerRuntimeEndpoint, Containerd: ccfg,
		ServerTLS: id.serverTLS, ServerAddress: net.JoinHostPort(cfg.BindAddress, strconv.Itoa(int(kcfg.Port))),
	}, id.runtime, client, cfg.Logger)
}

// kubeletServingTLS is the kubelet API's TLS: serving certificates (ECDSA, and RSA for clients
// that offer only RSA suites or need the static RSA key exchange, pki.ServeStaticRSA) for the
// node's names and addresses signed by the cluster CA; client certificates are verified when
// given (the API server's), and callers without one may bring a bearer token (kubeletauth
// reviews both).
func kubeletServingTLS(cfg *Config, now time.Time) (*tls.Config, error) {
	dir := filepath.Join(cfg.DataDir, "pki")
	ca, err := pki.LoadOrCreateCA(dir, "ca", "skiff-ca", now)
	if err != nil {
		return nil, err
	}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(cfg.AdvertiseAddress)}
	if ip := net.ParseIP(cfg.BindAddress); ip != nil && !ip.IsUnspecified() {
		ips = append(ips, ip)
	}
	pairs, err := ca.EnsureServing(dir, "kubelet", pki.Leaf{CommonName: "system:node:" + cfg.NodeName, Organization: []string{"system:nodes"}, DNSNames: []string{cfg.NodeName, "localhost"}, IPs: ips, Server: true}, now)
	if err != nil {
		return nil, fmt.Errorf("kubelet serving certificate: %w", err)
	}
	// Served from a holder, so the renewal loop's new pairs serve from the next handshake.
	holder, err := pki.NewKeyPairHolder(pairs)
	if err != nil {
		return nil, err
	}
	// Client CAs from the bundle as it is on disk: a CA rotation's new CA is trusted, its old one
	// refused, without a restart.
	clientCAs, err := pki.NewPoolHolder(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("kubelet client CAs: %w", err)
	}
	return clientCAs.ServerTLS(holder.ServerTLS(&tls.Config{ClientCAs: clientCAs.Pool(), ClientAuth: tls.VerifyClientCertIfGiven, MinVersion: tls.VersionTLS12})), nil
}

// kubeletClientTLS is the API server's side of that connection: its own client certificate and
// the cluster CA to verify kubelets.
func kubeletClientTLS(cfg *Config, now time.Time) (*tls.Config, error) {
	dir := filepath.Join(cfg.DataDir, "pki")
	ca, err := pki.LoadOrCreateCA(dir, "ca", "skiff-ca", now)
	if err != nil {
		return nil, err
	}
	certPath, keyPath, err := ca.EnsureLeaf(dir, "apiserver-kubelet-client", pki.Leaf{CommonName: kubeletClientUser, Client: true}, now)
	if err != nil {
		return nil, fmt.Errorf("API server kubelet-client certificate: %w", err)
	}
	holder, err := pki.NewKeyPairHolder([]pki.KeyPairFiles{{CertFile: certPath, KeyFile: keyPath}})
	if err != nil {
		return nil, err
	}
	// Kubelets are verified against the bundle as it is on disk at each handshake, so a CA
	// rotation's new CA is trusted, and its retired one refused, without a restart.
	roots, err := pki.NewPoolHolder(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("kubelet CAs: %w", err)
	}
	return roots.ClientTLSForHosts(&tls.Config{GetClientCertificate: holder.GetClientCertificate, MinVersion: tls.VersionTLS12}, isNodeServingCert), nil
}

// isNodeServingCert accepts a kubelet's serving certificate (a node's identity, system:node:<name>
// in system:nodes) for a kubelet dialed by IP address, whose name the TLS client cannot check
// (pki.PoolHolder.ClientTLSForHosts); kube-apiserver without --kubelet-certificate-authority
// checks nothing at all.
func isNodeServingCert(cert *x509.Certificate) error {
	if !strings.HasPrefix(cert.Subject.CommonName, "system:node:") || !slices.Contains(cert.Subject.Organization, "system:nodes") {
		return fmt.Errorf("kubelet certificate %q (%v) is not a node's", cert.Subject.CommonName, cert.Subject.Organization)
	}
	return nil
}
