package cluster

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-sh/skiff/internal/authz/bootstrappolicy"
	"github.com/skiff-sh/skiff/internal/metricsserver"
	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/storage"
)

// newResourceMetrics builds the scraper behind metrics.k8s.io: it reaches kubelets with the API
// server's kubelet client certificate (system:kubelet-api-admin grants nodes/metrics).
func newResourceMetrics(cfg *Config, reg prometheus.Registerer, now time.Time) (*metricsserver.Server, error) {
	tlsCfg, err := kubeletClientTLS(cfg, now)
	if err != nil {
		return nil, fmt.Errorf("resource metrics: %w", err)
	}
	return metricsserver.New(metricsserver.Config{
		Resolution: cfg.MetricsResolution,
		Transport:  &http.Transport{TLSClientConfig: tlsCfg, MaxIdleConnsPerHost: 1, IdleConnTimeout: 2 * cfg.MetricsResolution},
		Log:        cfg.Logger.With("component", "resource-metrics"),
		Registerer: reg,
	})
}

// resourceMetricsStorage is the storage of a metrics.k8s.io resource (nil for any other).
func resourceMetricsStorage(ms *metricsserver.Server, res *registry.Resource) storage.Interface {
	if ms == nil || res.GroupVersion.Group != "metrics.k8s.io" {
		return nil
	}
	if res.Plural == "nodes" {
		return ms.NodeStorage()
	}
	return ms.PodStorage()
}

// resourceMetricsRole scrapes the kubelets until ctx ends, with node and pod caches read from the
// API server's watch cache in process where it can (metrics-server keeps the same two caches).
func (n *Node) resourceMetricsRole() role {
	return role{name: "resource metrics", run: func(ctx context.Context) error {
		inProcess, err := n.caches.localInformers(&n.cfg)
		if err != nil {
			return err
		}
		restCfg, err := componentRESTConfig(&n.cfg, bootstrappolicy.MetricsServer, nil, time.Now())
		if err != nil {
			return err
		}
		client, err := kubernetes.NewForConfig(restCfg)
		if err != nil {
			return fmt.Errorf("resource metrics: %w", err)
		}
		factory := informers.NewSharedInformerFactory(client, 0)
		inProcess.Register(factory)
		nodes, pods := factory.Core().V1().Nodes(), factory.Core().V1().Pods()
		nodes.Informer()
		pods.Informer()
		factory.Start(ctx.Done())
		defer factory.Shutdown()
		for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
			if !ok && ctx.Err() == nil {
				return fmt.Errorf("resource metrics: cache of %v did not sync", typ)
			}
		}
		return n.resourceMetrics.Run(ctx, nodes.Lister(), pods.Lister())
	}}
}
