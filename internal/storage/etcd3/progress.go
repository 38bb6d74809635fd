package etcd3

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/utils/clock"
)

// ProgressSupport tells whether an etcd cluster's watch progress notifications can be trusted.
// etcd 3.4 before 3.4.31 and 3.5 before 3.5.13 may send a progress notification (asked for or
// periodic) ahead of events of the revision it names (etcd-io/etcd#15220, #17557): a watch cache
// that believed it would serve a consistent list without writes already acknowledged, and a
// watcher's bookmark would skip events. Kubernetes requires the same versions before it serves
// consistent lists from its watch cache. One ProgressSupport serves every store of a client.
type ProgressSupport struct {
	client *clientv3.Client
	clock  clock.PassiveClock

	mu sync.Mutex
	// supported holds the verdict per endpoint once its version has been read.
	supported map[string]bool
	// lastTry is when an endpoint's version last could not be read: asked again after retryAfter.
	lastTry time.Time
}

// retryAfter spaces the version reads of endpoints that did not answer.
const retryAfter = 10 * time.Second

// NewProgressSupport checks client's endpoints, lazily, as stores ask.
func NewProgressSupport(client *clientv3.Client, clk clock.PassiveClock) *ProgressSupport {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &ProgressSupport{client: client, clock: clk, supported: map[string]bool{}}
}

// Supported reports whether the endpoints run etcd whose progress notifications are sound: every
// endpoint whose version has been read, and at least one has (as Kubernetes' checker judges).
// Until one answers, a consistent read goes to etcd, which is always correct. An endpoint that
// did not answer (a member down) is asked again after retryAfter; found unsound, it makes the
// answer false.
func (p *ProgressSupport) Supported(ctx context.Context) bool {
	if p == nil {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	retry := p.lastTry.IsZero() || p.clock.Since(p.lastTry) >= retryAfter
	endpoints := p.client.Endpoints()
	for _, ep := range endpoints {
		if _, known := p.supported[ep]; !known && retry {
			p.check(ctx, ep)
		}
	}
	return progressVerdict(endpoints, p.supported)
}

// progressVerdict judges endpoints by the verdicts read so far: sound when every endpoint read
// is, and at least one was read. A client without endpoints (in-process, to the embedded
// member) is sound.
func progressVerdict(endpoints []string, supported map[string]bool) bool {
	if len(endpoints) == 0 {
		return true
	}
	all, any := true, false
	for _, ep := range endpoints {
		if ok, known := supported[ep]; known {
			all, any = all && ok, true
		}
	}
	return all && any
}

// check reads ep's version into p.supported; the caller holds p.mu.
func (p *ProgressSupport) check(ctx context.Context, ep string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := p.client.Status(ctx, ep)
	if err != nil {
		p.lastTry = p.clock.Now()
		return
	}
	p.supported[ep] = ProgressSound(st.Version)
}

// ProgressSound says whether etcd version v sends progress notifications only after the events
// they cover: 3.4.31 and later 3.4, 3.5.13 and later 3.5, and every later minor version.
func ProgressSound(v string) bool {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 3 {
		return false
	}
	var n [3]int
	for i, s := range parts {
		if j := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }); j >= 0 {
			s = s[:j] // "0-rc.1"
		}
		x, err := strconv.Atoi(s)
		if err != nil {
			return false
		}
		n[i] = x
	}
	switch {
	case n[0] != 3:
		return n[0] > 3
	case n[1] == 4:
		return n[2] >= 31
	case n[1] == 5:
		return n[2] >= 13
	}
	return n[1] > 5
}
