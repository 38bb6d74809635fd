package flowcontrol

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ObjectCounts remembers each resource's object count for the width estimate of LISTs, refreshed
// at most once per refresh interval per resource; while one caller refreshes, the others use the
// last known count. Kubernetes' estimator likewise reads counts its storage refreshes periodically.
type ObjectCounts struct {
	clock   clock.PassiveClock
	refresh time.Duration

	mu     sync.Mutex
	counts map[string]*objectCount
}

type objectCount struct {
	n          int64
	at         time.Time
	refreshing bool
}

// NewObjectCounts returns an empty count cache refreshed every refresh.
func NewObjectCounts(c clock.PassiveClock, refresh time.Duration) *ObjectCounts {
	return &ObjectCounts{clock: c, refresh: refresh, counts: map[string]*objectCount{}}
}

// Get returns the count of resource, calling count when the remembered one is older than the
// refresh interval and nobody else is refreshing it. A failing count keeps the old value and is
// not tried again before the interval is over (when etcd has lost quorum every count fails, and a
// LIST should not wait for one each time).
func (o *ObjectCounts) Get(resource string, count func() (int64, error)) int64 {
	o.mu.Lock()
	e := o.counts[resource]
	if e == nil {
		e = &objectCount{}
		o.counts[resource] = e
	}
	now := o.clock.Now()
	if e.refreshing || (!e.at.IsZero() && now.Sub(e.at) < o.refresh) {
		n := e.n
		o.mu.Unlock()
		return n
	}
	e.refreshing = true
	o.mu.Unlock()

	n, err := count()

	o.mu.Lock()
	defer o.mu.Unlock()
	e.refreshing = false
	e.at = now
	if err == nil {
		e.n = n
	}
	return e.n
}
