package metricsserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// DefaultResolution is how often kubelets are scraped unless configured (metrics-server's
// --metric-resolution default).
const DefaultResolution = 15 * time.Second

// maxResponseBytes bounds one kubelet's answer.
const maxResponseBytes = 64 << 20

// Config configures a Server.
type Config struct {
	// Resolution is the scrape interval (0: DefaultResolution).
	Resolution time.Duration
	// Transport reaches kubelets (TLS with the API server's kubelet client certificate). Required.
	Transport http.RoundTripper
	// DefaultPort is the kubelet port of nodes that publish none (0: 10250).
	DefaultPort int32
	// Concurrency bounds the nodes scraped at once (0: 64).
	Concurrency int
	Clock       clock.WithTicker
	Log         *slog.Logger
	// Registerer takes the scraper's metrics (nil: not exported).
	Registerer prometheus.Registerer
}

// Server scrapes kubelets and serves their usage through NodeStorage and PodStorage.
type Server struct {
	cfg     Config
	client  *http.Client
	metrics *scraperMetrics

	mu     sync.RWMutex
	points *Points
	nodes  corelisters.NodeLister
	pods   corelisters.PodLister
}

// New returns a server that serves nothing until Run is given listers.
func New(cfg Config) (*Server, error) {
	if cfg.Transport == nil {
		return nil, errors.New("resource metrics: a kubelet transport is required")
	}
	if cfg.Resolution <= 0 {
		cfg.Resolution = DefaultResolution
	}
	if cfg.DefaultPort == 0 {
		cfg.DefaultPort = 10250
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 64
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Log == nil {
		return nil, errors.New("resource metrics: a logger is required")
	}
	m, err := newScraperMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	timeout := min(cfg.Resolution, 10*time.Second)
	return &Server{cfg: cfg, client: &http.Client{Transport: cfg.Transport, Timeout: timeout}, points: NewPoints(), metrics: m}, nil
}

// Run scrapes every Resolution until ctx ends; nodes and pods are the caches the objects' names
// and labels come from (their informers must be running).
func (s *Server) Run(ctx context.Context, nodes corelisters.NodeLister, pods corelisters.PodLister) error {
	s.mu.Lock()
	s.nodes, s.pods = nodes, pods
	s.mu.Unlock()
	ticker := s.cfg.Clock.NewTicker(s.cfg.Resolution)
	defer ticker.Stop()
	for {
		s.ScrapeOnce(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// ScrapeOnce scrapes every Ready node once and stores the cycle. A node that fails is logged
// and left out (its usage is not served until it answers again).
func (s *Server) ScrapeOnce(ctx context.Context) {
	s.mu.RLock()
	lister := s.nodes
	s.mu.RUnlock()
	if lister == nil {
		return
	}
	began := s.cfg.Clock.Now()
	defer func() { s.metrics.tickDuration.Observe(s.cfg.Clock.Since(began).Seconds()) }()
	all, err := lister.List(labels.Everything())
	if err != nil {
		s.cfg.Log.Warn("resource metrics: list nodes", "err", err)
		return
	}
	var targets []*corev1.Node
	for _, n := range all {
		if ctrlutil.IsNodeReady(n) {
			targets = append(targets, n)
		}
	}
	batches := make([]*Batch, len(targets))
	sem := make(chan struct{}, s.cfg.Concurrency)
	var wg sync.WaitGroup
	for i, n := range targets {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			start := s.cfg.Clock.Now()
			b, err := s.ScrapeNode(ctx, n)
			s.metrics.request(n.Name, s.cfg.Clock.Since(start), err)
			if err != nil {
				s.cfg.Log.Warn("resource metrics: scrape kubelet", "node", n.Name, "err", err)
				return
			}
			batches[i] = &b
		}()
	}
	wg.Wait()
	got := make([]Batch, 0, len(batches))
	for _, b := range batches {
		if b != nil {
			got = append(got, *b)
		}
	}
	s.mu.Lock()
	s.points.Store(got)
	s.metrics.stored(s.points)
	s.mu.Unlock()
	s.cfg.Log.Debug("resource metrics: scraped", "nodes", len(targets), "answered", len(got))
}

// ScrapeNode reads one kubelet's /metrics/resource.
func (s *Server) ScrapeNode(ctx context.Context, node *corev1.Node) (Batch, error) {
	host, err := KubeletHost(node, s.cfg.DefaultPort)
	if err != nil {
		return Batch{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+host+"/metrics/resource", nil)
	if err != nil {
		return Batch{}, fmt.Errorf("node %s: %w", node.Name, err)
	}
	scrapeTime := s.cfg.Clock.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return Batch{}, fmt.Errorf("node %s: %w", node.Name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return Batch{}, fmt.Errorf("node %s: read resource metrics: %w", node.Name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Batch{}, fmt.Errorf("node %s: GET /metrics/resource: %s", node.Name, resp.Status)
	}
	return ParseResourceMetrics(node.Name, body, scrapeTime)
}

// KubeletHost is host:port of a node's kubelet: its InternalIP (else ExternalIP, else hostname)
// and the port the node publishes (else defaultPort).
func KubeletHost(node *corev1.Node, defaultPort int32) (string, error) {
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if port == 0 {
		port = defaultPort
	}
	for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName} {
		for _, a := range node.Status.Addresses {
			if a.Type == t && a.Address != "" {
				return net.JoinHostPort(a.Address, strconv.Itoa(int(port))), nil
			}
		}
	}
	return "", fmt.Errorf("node %s has no address to reach its kubelet", node.Name)
}

// nodeObjects are the NodeMetrics of the nodes that exist and have usage (only name when set).
func (s *Server) nodeObjects(name string) []runtime.Object {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.nodes == nil {
		return nil
	}
	now := s.cfg.Clock.Now()
	names := s.points.Nodes()
	if name != "" {
		names = []string{name}
	}
	var out []runtime.Object
	for _, n := range names {
		u, ok := s.points.Node(n)
		if !ok {
			continue
		}
		node, err := s.nodes.Get(n)
		if err != nil {
			continue // gone, or not yet in the cache
		}
		out = append(out, NodeMetrics(node, u, now))
	}
	return out
}

// podObjects are the PodMetrics of the pods of namespace ("" for all) that exist and have
// usage for every container (only name when set).
func (s *Server) podObjects(namespace, name string) []runtime.Object {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.pods == nil {
		return nil
	}
	now := s.cfg.Clock.Now()
	keys := s.points.Pods()
	if name != "" {
		keys = []PodKey{{Namespace: namespace, Name: name}}
	}
	var out []runtime.Object
	for _, k := range keys {
		if namespace != "" && k.Namespace != namespace {
			continue
		}
		at, window, containers, ok := s.points.Pod(k)
		if !ok {
			continue
		}
		pod, err := s.pods.Pods(k.Namespace).Get(k.Name)
		if err != nil {
			if !apierrors.IsNotFound(err) {
				s.cfg.Log.Debug("resource metrics: pod lister", "namespace", k.Namespace, "pod", k.Name, "err", err)
			}
			continue
		}
		out = append(out, PodMetrics(pod, at, window, containers, now))
	}
	return out
}
