package dns

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Config is a node's DNS server.
type Config struct {
	// Addr is where it answers, host:port (the node's address, port 53).
	Addr string
	// Domain is the cluster domain.
	Domain string
	// Upstreams are the resolvers other names go to (host:port).
	Upstreams []string
	Client    kubernetes.Interface
	Clock     clock.WithTicker
	Logger    *slog.Logger
	// Registerer receives the metrics; nil registers none.
	Registerer prometheus.Registerer
	// PrepareInformers, when set, is given the informer factory before the server asks it for
	// informers (in-process informers on the API server's watch cache, as the service proxy's).
	PrepareInformers func(informers.SharedInformerFactory)
}

// retryListen is how often a failed bind (the address not yet up, port 53 taken) is retried.
const retryListen = 5 * time.Second

// Run serves cluster DNS from informers until ctx ends. A failure to bind is logged and retried
// rather than returned: a node whose DNS cannot listen still runs its pods.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	factory := informers.NewSharedInformerFactory(cfg.Client, 0)
	if cfg.PrepareInformers != nil {
		cfg.PrepareInformers(factory)
	}
	svcInf := factory.Core().V1().Services().Informer()
	sliceInf := factory.Discovery().V1().EndpointSlices().Informer()
	nsInf := factory.Core().V1().Namespaces().Informer()
	if err := svcInf.AddIndexers(ServiceIndexers()); err != nil {
		return fmt.Errorf("dns: service indexers: %w", err)
	}
	if err := sliceInf.AddIndexers(SliceIndexers()); err != nil {
		return fmt.Errorf("dns: endpointslice indexers: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitFor(ctx, "", svcInf.HasSyncedChecker(), sliceInf.HasSyncedChecker(), nsInf.HasSyncedChecker()) {
		return nil // stopped before the caches synced
	}
	srv, err := NewServer(ServerConfig{
		Zone:       Zone{Domain: cfg.Domain, Serial: uint32(cfg.Clock.Now().Unix())},
		View:       IndexerView{Services: svcInf.GetIndexer(), EndpointSlices: sliceInf.GetIndexer(), Namespaces: nsInf.GetIndexer()},
		Upstream:   &Forwarder{Upstreams: cfg.Upstreams, Cache: NewCache(cfg.Clock, 0, 0, 0)},
		Clock:      cfg.Clock,
		Logger:     cfg.Logger,
		Registerer: cfg.Registerer,
	})
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		pc, l, err := Listen(cfg.Addr)
		if err == nil {
			cfg.Logger.Info("cluster DNS serving", "address", cfg.Addr, "domain", cfg.Domain, "upstreams", cfg.Upstreams)
			return srv.Serve(ctx, pc, l)
		}
		log := cfg.Logger.Debug
		if attempt == 0 {
			log = cfg.Logger.Error // once; the retries every few seconds would drown the log
		}
		log("cluster DNS cannot listen; retrying", "address", cfg.Addr, "every", retryListen, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-cfg.Clock.After(retryListen):
		}
	}
}
