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

// Supported reports whether every endpoint runs an etcd whose progress notifications are sound.
// An endpoint whose version cannot be read yet counts as unsound: a consistent read then goes to
// etcd, which is always correct.
func (p *ProgressSupport) Supported(ctx context.Context) bool {
	if p == nil {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	all := true
	for _, ep := range p.client.Endpoints() {
		ok, known := p.supported[ep]
		if !known {
			if !p.lastTry.IsZero() && p.clock.Since(p.lastTry) < retryAfter {
				return false
			}
			ok, known = p.check(ctx, ep)
		}
		all = all && known && ok
	}
	return all
}

// check reads ep's version; the caller holds p.mu.
func (p *ProgressSupport) check(ctx context.Context, ep string) (ok, known bool) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := p.client.Status(ctx, ep)
	if err != nil {
		p.lastTry = p.clock.Now()
		return false, false
	}
	ok = ProgressSound(st.Version)
	p.supported[ep] = ok
	return ok, true
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
