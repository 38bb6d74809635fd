package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/clock"
)

// ServiceHealth is what one health-check node port reports: the Service it belongs to and how
// many ready endpoints (distinct addresses) it has on this node.
type ServiceHealth struct {
	Namespace, Name string
	LocalEndpoints  int
}

// HealthChecks are the health-check node ports this node serves, by port: every proxied
// LoadBalancer Service with externalTrafficPolicy Local and a spec.healthCheckNodePort, with its
// ready endpoints on this node counted by address (a pod behind two ports counts once), as
// kube-proxy. Pure.
func HealthChecks(cfg Config, services []*corev1.Service, endpointSlices []*discoveryv1.EndpointSlice) map[int32]ServiceHealth {
	out := map[int32]ServiceHealth{}
	want := map[string]int32{}
	for _, svc := range services {
		if !proxied(svc) || svc.Spec.Type != corev1.ServiceTypeLoadBalancer ||
			svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal || svc.Spec.HealthCheckNodePort == 0 {
			continue
		}
		if _, taken := out[svc.Spec.HealthCheckNodePort]; taken {
			continue // the API never hands one port out twice; keep the first if it did
		}
		out[svc.Spec.HealthCheckNodePort] = ServiceHealth{Namespace: svc.Namespace, Name: svc.Name}
		want[svc.Namespace+"/"+svc.Name] = svc.Spec.HealthCheckNodePort
	}
	local := map[int32]map[string]bool{}
	for _, s := range endpointSlices {
		port, ok := want[s.Namespace+"/"+s.Labels[discoveryv1.LabelServiceName]]
		if !ok || s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		for _, e := range s.Endpoints {
			ready := e.Conditions.Ready == nil || *e.Conditions.Ready
			if !ready || len(e.Addresses) == 0 || e.NodeName == nil || *e.NodeName != cfg.NodeName {
				continue
			}
			if local[port] == nil {
				local[port] = map[string]bool{}
			}
			local[port][e.Addresses[0]] = true
		}
	}
	for port, addrs := range local {
		h := out[port]
		h.LocalEndpoints = len(addrs)
		out[port] = h
	}
	return out
}

// healthReply is kube-proxy's health-check answer.
type healthReply struct {
	Service struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"service"`
	LocalEndpoints      int  `json:"localEndpoints"`
	ServiceProxyHealthy bool `json:"serviceProxyHealthy"`
}

// proxyHealth is the proxy's own state for /healthz and /livez: healthy once the first sync is
// done and no change has waited longer than timeout for a sync, as kube-proxy.
type proxyHealth struct {
	clock   clock.PassiveClock
	timeout time.Duration

	mu            sync.Mutex
	lastUpdated   time.Time // the last successful sync
	pendingSince  time.Time // the oldest change not yet synced; zero when none
	firstSyncDone bool
}

func (p *proxyHealth) queued() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pendingSince.IsZero() {
		p.pendingSince = p.clock.Now()
	}
}

func (p *proxyHealth) synced() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastUpdated = p.clock.Now()
	p.pendingSince = time.Time{}
	p.firstSyncDone = true
}

// state is whether the proxy is healthy now, with the time of the last sync and the current time.
func (p *proxyHealth) state() (healthy bool, lastUpdated, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now = p.clock.Now()
	healthy = p.firstSyncDone && (p.pendingSince.IsZero() || now.Sub(p.pendingSince) < p.timeout)
	return healthy, p.lastUpdated, now
}

// ServeHTTP answers /healthz and /livez as kube-proxy's health server: 200 while healthy,
// 503 otherwise, with the last sync's time.
func (p *proxyHealth) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	healthy, last, now := p.state()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if healthy {
		w.WriteHeader(http.StatusOK)
	} else {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"lastUpdated": last, "currentTime": now, "nodeEligible": true})
}

// healthServers serves one HTTP listener per health-check node port on the node's address and
// follows the ports and counts each sync hands it (the thin, stateful layer over HealthChecks).
type healthServers struct {
	addr   string // address to listen on; "" means every address
	proxy  *proxyHealth
	log    *slog.Logger
	listen func(network, address string) (net.Listener, error)

	mu      sync.Mutex
	health  map[int32]ServiceHealth
	servers map[int32]*http.Server
}

func newHealthServers(addr netip.Addr, proxy *proxyHealth, log *slog.Logger) *healthServers {
	h := &healthServers{proxy: proxy, log: log, health: map[int32]ServiceHealth{}, servers: map[int32]*http.Server{}}
	if addr.IsValid() && !addr.IsUnspecified() {
		h.addr = addr.String()
	}
	h.listen = net.Listen
	return h
}

// sync opens listeners for new ports, closes those no longer wanted and updates the counts. A
// port that cannot be bound is logged and retried on the next sync.
func (h *healthServers) sync(want map[int32]ServiceHealth) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.health = want
	for port, srv := range h.servers {
		if _, ok := want[port]; !ok {
			_ = srv.Close()
			delete(h.servers, port)
			h.log.Info("health-check node port closed", "port", port)
		}
	}
	for port, svc := range want {
		if _, ok := h.servers[port]; ok {
			continue
		}
		l, err := h.listen("tcp", net.JoinHostPort(h.addr, strconv.Itoa(int(port))))
		if err != nil {
			h.log.Warn("listen on health-check node port", "port", port, "service", svc.Namespace+"/"+svc.Name, "err", err)
			continue
		}
		srv := &http.Server{Handler: h.handler(port), ReadHeaderTimeout: 5 * time.Second}
		h.servers[port] = srv
		go func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				h.log.Warn("health-check node port stopped", "port", port, "err", err)
			}
		}()
		h.log.Info("health-check node port serving", "port", port, "service", svc.Namespace+"/"+svc.Name)
	}
}

// handler answers as kube-proxy's health-check node ports do: 200 with the local endpoint count
// when there is at least one and the proxy is healthy, 503 otherwise.
func (h *healthServers) handler(port int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h.mu.Lock()
		svc, ok := h.health[port]
		h.mu.Unlock()
		if !ok {
			http.Error(w, "no service on this health-check port", http.StatusNotFound)
			return
		}
		healthy, _, _ := h.proxy.state()
		var r healthReply
		r.Service.Namespace, r.Service.Name = svc.Namespace, svc.Name
		r.LocalEndpoints, r.ServiceProxyHealthy = svc.LocalEndpoints, healthy
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Load-Balancing-Endpoint-Weight", strconv.Itoa(svc.LocalEndpoints))
		if svc.LocalEndpoints > 0 && healthy {
			w.WriteHeader(http.StatusOK)
		} else {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(r)
	})
}

// close stops every listener.
func (h *healthServers) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for port, srv := range h.servers {
		_ = srv.Close()
		delete(h.servers, port)
	}
}

// serveHealthz serves the proxy's /healthz and /livez on addr until ctx ends.
func serveHealthz(ctx context.Context, addr string, p *proxyHealth, log *slog.Logger) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("proxy healthz on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/healthz", p)
	mux.Handle("/livez", p)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("proxy healthz stopped", "err", err)
		}
	}()
	log.Info("proxy healthz serving", "address", l.Addr().String())
	return nil
}
