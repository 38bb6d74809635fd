package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-sh/skiff/internal/apiserver/leasereconciler"
	"github.com/skiff-sh/skiff/internal/identitylease"
	"github.com/skiff-sh/skiff/internal/lb"
	"github.com/skiff-sh/skiff/internal/pki"
)

// lbServerName is the name clients of the node-local load balancer verify the API servers'
// certificates against: every API server's certificate carries it, whereas the balancer's own
// address (127.0.0.2:6444 ...) is in none but the local one's.
const lbServerName = "kubernetes"

// LBAddress is where the node-local API load balancer listens: the bind address when it is a
// loopback address (so nodes on 127.0.0.2, 127.0.0.3 ... of one machine do not collide), else
// 127.0.0.1.
func (c *Config) LBAddress() string {
	host := "127.0.0.1"
	if ip := net.ParseIP(c.BindAddress); ip != nil && ip.IsLoopback() {
		host = ip.String()
	}
	return net.JoinHostPort(host, strconv.Itoa(c.LBPort))
}

// LBURL is the API URL of the node's local clients: its load balancer.
func (c *Config) LBURL() string { return "https://" + c.LBAddress() }

// lbSeeds are the API servers the balancer starts from: this node's own API server. (A joining
// worker-only node starts from its --server instead.)
func lbSeeds(cfg *Config) ([]string, error) {
	u, err := url.Parse(cfg.LocalURL())
	if err != nil {
		return nil, fmt.Errorf("local API URL: %w", err)
	}
	return []string{u.Host}, nil
}

// throughLB points a client configuration at the node's load balancer.
func throughLB(cfg *Config, rc *rest.Config) *rest.Config {
	rc.Host = cfg.LBURL()
	rc.TLSClientConfig.ServerName = lbServerName
	return rc
}

// localKubeconfig is a kubeconfig for clients on this host, through the load balancer.
func localKubeconfig(cfg *Config, caPEM, certPEM, keyPEM []byte) ([]byte, error) {
	data, err := pki.Kubeconfig("skiff", cfg.LBURL(), caPEM, certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	kc, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("reload kubeconfig: %w", err)
	}
	for _, c := range kc.Clusters {
		c.TLSServerName = lbServerName
	}
	out, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, fmt.Errorf("render kubeconfig: %w", err)
	}
	return out, nil
}

// nodeLB is the running balancer of a node.
type nodeLB struct {
	b    *lb.Balancer
	stop context.CancelFunc
	done chan struct{}
}

// startLB starts the node-local load balancer. It lives until stopLB, outside the roles' context:
// the kubelet's last status writes during a stop still go through it.
func (n *Node) startLB(ctx context.Context) error {
	cfg := &n.cfg
	seeds, err := lbSeeds(cfg)
	if err != nil {
		return err
	}
	// The balancer's identity probes /readyz (system:public-info-viewer) and watches the
	// "kubernetes" EndpointSlices (system:node-proxier grants list and watch): kube-proxy's.
	rc, err := componentRESTConfig(cfg, "system:kube-proxy", nil, time.Now())
	if err != nil {
		return err
	}
	rc = throughLB(cfg, rc)
	probeTLS, err := probeTLSConfig(rc)
	if err != nil {
		return err
	}
	n.lb, err = launchLB(ctx, cfg, seeds, probeTLS, rc, n.metrics.fresh("lb"), nil)
	return err
}

// launchLB listens on the node's balancer address and runs the balancer with its endpoint watch
// (through itself, with rc) until the returned nodeLB is stopped; learned (optional) is told each
// API server list the watch learns.
func launchLB(ctx context.Context, cfg *Config, seeds []string, probeTLS *tls.Config, rc *rest.Config, reg prometheus.Registerer, learned func([]string)) (*nodeLB, error) {
	b, err := lb.New(lb.Config{
		ListenAddress: cfg.LBAddress(), Seeds: seeds, ProbeTLS: probeTLS,
		Registerer: reg, Logger: cfg.Logger.With("component", "lb"), Learned: learned,
	})
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	lbCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	nl := &nodeLB{b: b, stop: cancel, done: make(chan struct{})}
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		_ = b.WatchEndpoints(lbCtx, client)
	}()
	go func() {
		defer close(nl.done)
		if err := b.Run(lbCtx); err != nil {
			cfg.Logger.Error("node-local load balancer stopped", "err", err)
		}
		<-watchDone
	}()
	cfg.Logger.Info("node-local API load balancer listening", "address", b.Addr(), "seeds", seeds)
	return nl, nil
}

func (n *Node) stopLB() { n.lb.close() }

// close stops the balancer and waits for it (nil: nothing to stop).
func (l *nodeLB) close() {
	if l == nil {
		return
	}
	l.stop()
	<-l.done
}

// probeTLSConfig is the TLS the balancer's /readyz probes use: the cluster CA, the balancer's
// client certificate, and the name every API server's certificate carries.
func probeTLSConfig(rc *rest.Config) (*tls.Config, error) {
	// The component's own TLS (componentRESTConfig), whose client certificate is renewed in place.
	if renewed := componentClientTLS(rc); renewed != nil {
		renewed.ServerName = lbServerName
		return renewed, nil
	}
	cert, err := tls.X509KeyPair(rc.TLSClientConfig.CertData, rc.TLSClientConfig.KeyData)
	if err != nil {
		return nil, fmt.Errorf("load balancer client certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(rc.TLSClientConfig.CAData) {
		return nil, errors.New("cluster CA certificate does not parse")
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: lbServerName, MinVersion: tls.VersionTLS12}, nil
}

// endpointReconcilerRole keeps this API server's master and identity leases and the "kubernetes"
// endpoints. As a role it stops before the API server does, so it removes itself from the
// endpoints while it can still write them.
func (n *Node) endpointReconcilerRole() role {
	return role{name: "endpoint reconciler", run: func(ctx context.Context) error {
		_, client, err := n.loopbackClient()
		if err != nil {
			return err
		}
		rcfg := leasereconciler.Config{
			Etcd: n.etcdClient, Client: client,
			Identity:       n.cfg.NodeName,
			HolderIdentity: leasereconciler.IdentityLeaseName(n.cfg.NodeName) + "_" + strconv.Itoa(os.Getpid()),
			IP:             n.cfg.AdvertiseAddress, Port: int32(n.cfg.HTTPSPort),
			// The interval the readers' liveness rule (identitylease.Live) is three of.
			IdentityRenewInterval: identitylease.RenewInterval,
			Logger:                n.cfg.Logger,
		}
		if n.encryption != nil {
			// The Lease names the encryption configuration in force: a key rotation waits on it.
			rcfg.Annotations = func() map[string]string {
				return map[string]string{EncryptionConfigAnnotation: n.encryption.reloader.Hash()}
			}
			rcfg.RenewNow = n.encryption.changed
		}
		return leasereconciler.Run(ctx, rcfg)
	}}
}
