package lb

import (
	"slices"
	"time"
)

// Health is what the balancer believes of a backend.
type Health int

const (
	// Unknown: never probed yet; tried after the healthy ones.
	Unknown Health = iota
	// Healthy: the last probes answered /readyz with 200.
	Healthy
	// Unhealthy: a probe or a dial failed; tried only when nothing better is left.
	Unhealthy
)

func (h Health) String() string {
	switch h {
	case Healthy:
		return "healthy"
	case Unhealthy:
		return "unhealthy"
	default:
		return "unknown"
	}
}

// EventType says what happened.
type EventType int

const (
	// EventTick: time passed (Now is set on every event).
	EventTick EventType = iota
	// EventEndpoints: the API servers listed by the "kubernetes" endpoints (Addrs, host:port).
	EventEndpoints
	// EventProbe: a health probe of Addr finished; OK says whether /readyz answered 200, and
	// TimedOut whether it got no answer within the probe timeout.
	EventProbe
	// EventDialFailed: a client connection could not be opened to Addr.
	EventDialFailed
)

// Event is one input to State.Step.
type Event struct {
	Type  EventType
	Now   time.Time
	Addr  string
	Addrs []string
	OK    bool
	// TimedOut: a failed probe had no answer in time, which a server busy for a moment shares
	// with a hung one (StateConfig.SlowFallCount).
	TimedOut bool
}

// StateConfig tunes the health logic.
type StateConfig struct {
	// Seeds are the backends known before any endpoints are learned (the local API server, or the
	// --server a joining node was given). A seed stays a backend while the endpoints name other
	// servers, as the last resort, unless the endpoints list it too.
	Seeds []string
	// ProbeInterval is the time between two probes of one backend.
	ProbeInterval time.Duration
	// RiseCount and FallCount are how many consecutive probe results move a backend to Healthy or
	// Unhealthy. A failed dial moves it to Unhealthy at once.
	RiseCount, FallCount int
	// SlowFallCount is how many consecutive failed probes move a backend to Unhealthy when the
	// last of them timed out (default 2). Going unhealthy closes every connection through the
	// balancer to the backend, requests and watches in flight included; one /readyz slower than
	// the timeout is what a loaded machine gives a healthy server now and then (a CA rotation's
	// e2e test saw its requests cut so, with EOF), while a server that is hung or paused misses
	// the next probe as well. A server that answers "not ready", or refuses, goes at FallCount.
	SlowFallCount int
}

// Default fills unset fields.
func (c *StateConfig) Default() {
	if c.ProbeInterval <= 0 {
		c.ProbeInterval = time.Second
	}
	if c.RiseCount <= 0 {
		c.RiseCount = 1
	}
	if c.FallCount <= 0 {
		c.FallCount = 1
	}
	if c.SlowFallCount <= 0 {
		c.SlowFallCount = 2
	}
}

// Ready is the plan State hands out: what to do now.
type Ready struct {
	// Probe lists backends to health-check now (each reported back with EventProbe).
	Probe []string
	// Close lists backends whose open connections must be closed: they went unhealthy or left the
	// endpoints, so their clients reconnect (to a good backend).
	Close []string
	// Order is the order to try backends for new connections: healthy first (seeds before learned
	// backends, the local API server being a seed), then unknown, then unhealthy.
	Order []string
}

// Backend is the balancer's view of one API server, for metrics and status.
type Backend struct {
	Addr    string
	Health  Health
	Seed    bool
	Learned bool
}

type backend struct {
	Backend
	successes, failures int
	nextProbe           time.Time
	probing             bool
}

// State decides, without I/O, which backends are healthy and which to use. It is not safe for
// concurrent use: the caller serialises Step and Ready.
type State struct {
	cfg      StateConfig
	backends map[string]*backend
	close    []string
	// badConns are backends that went unhealthy and whose connections are to be closed once
	// another backend is healthy: cutting them with nowhere better to go would only break clients.
	badConns map[string]bool
}

// NewState starts with the seeds, in unknown health.
func NewState(cfg StateConfig) *State {
	cfg.Default()
	s := &State{cfg: cfg, backends: map[string]*backend{}, badConns: map[string]bool{}}
	for _, a := range cfg.Seeds {
		s.backends[a] = &backend{Backend: Backend{Addr: a, Seed: true}}
	}
	return s
}

// Step applies one event.
func (s *State) Step(ev Event) {
	switch ev.Type {
	case EventEndpoints:
		s.setEndpoints(ev.Addrs)
	case EventProbe:
		b, ok := s.backends[ev.Addr]
		if !ok {
			return
		}
		b.probing = false
		b.nextProbe = ev.Now.Add(s.cfg.ProbeInterval)
		if ev.OK {
			b.failures = 0
			b.successes++
			if b.Health != Healthy && b.successes >= s.cfg.RiseCount {
				b.Health = Healthy
			}
			return
		}
		b.successes = 0
		b.failures++
		fall := s.cfg.FallCount
		if ev.TimedOut {
			fall = max(fall, s.cfg.SlowFallCount)
		}
		if b.Health != Unhealthy && b.failures >= fall {
			s.markUnhealthy(b)
		}
	case EventDialFailed:
		b, ok := s.backends[ev.Addr]
		if !ok {
			return
		}
		b.successes = 0
		b.failures++
		if b.Health != Unhealthy {
			s.markUnhealthy(b)
		}
	case EventTick:
	}
}

// markUnhealthy moves b to Unhealthy and marks its connections for closing: a client stuck on a
// dead or unready server reconnects through the balancer to a good one (as soon as there is one).
func (s *State) markUnhealthy(b *backend) {
	b.Health = Unhealthy
	s.badConns[b.Addr] = true
}

// setEndpoints replaces the learned backends. An empty list is ignored: it means the endpoints are
// being rewritten or every lease lapsed at once, and the backends known so far are a better bet
// than none.
func (s *State) setEndpoints(addrs []string) {
	if len(addrs) == 0 {
		return
	}
	for _, a := range addrs {
		b, ok := s.backends[a]
		if !ok {
			b = &backend{Backend: Backend{Addr: a}}
			s.backends[a] = b
		}
		b.Learned = true
	}
	for a, b := range s.backends {
		if slices.Contains(addrs, a) {
			continue
		}
		b.Learned = false
		if !b.Seed {
			delete(s.backends, a)
			delete(s.badConns, a)
			s.close = append(s.close, a)
		}
	}
}

// Ready returns the plan at now: the probes that are due (marked in flight until their result is
// stepped in), the connections to close since the last Ready, and the dial order.
func (s *State) Ready(now time.Time) Ready {
	var rd Ready
	for _, a := range s.sortedAddrs() {
		b := s.backends[a]
		if !b.probing && !now.Before(b.nextProbe) {
			b.probing = true
			rd.Probe = append(rd.Probe, a)
		}
	}
	rd.Order = s.Order()
	if len(rd.Order) > 0 && s.backends[rd.Order[0]].Health == Healthy {
		for _, a := range s.sortedAddrs() {
			if !s.badConns[a] {
				continue
			}
			delete(s.badConns, a)
			if s.backends[a].Health == Unhealthy {
				s.close = append(s.close, a)
			}
		}
	}
	rd.Close = s.close
	s.close = nil
	return rd
}

// Order is the order to try backends for a new connection.
func (s *State) Order() []string {
	addrs := s.sortedAddrs()
	slices.SortStableFunc(addrs, func(x, y string) int {
		return rank(s.backends[x]) - rank(s.backends[y])
	})
	return addrs
}

// rank orders healthy before unknown before unhealthy and, within one health, a seed (the local
// API server, which needs no network hop) before learned backends.
func rank(b *backend) int {
	r := 0
	switch b.Health {
	case Healthy:
		r = 0
	case Unknown:
		r = 10
	case Unhealthy:
		r = 20
	}
	if !b.Seed {
		r++
	}
	return r
}

// Health is what State believes of addr (Unknown for a backend it does not know).
func (s *State) Health(addr string) Health {
	if b, ok := s.backends[addr]; ok {
		return b.Health
	}
	return Unknown
}

// Backends is the current view, sorted by address.
func (s *State) Backends() []Backend {
	var out []Backend
	for _, a := range s.sortedAddrs() {
		out = append(out, s.backends[a].Backend)
	}
	return out
}

func (s *State) sortedAddrs() []string {
	addrs := make([]string, 0, len(s.backends))
	for a := range s.backends {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	return addrs
}
