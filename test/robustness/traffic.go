package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// TrafficConfig shapes one client's load.
type TrafficConfig struct {
	// Keys are the hot objects every client works on (compare-and-set contention).
	Keys []string
	// Interval is the pause between two calls of one client.
	Interval time.Duration
	// Timeout bounds each call: a call cut short has an unknown outcome.
	Timeout time.Duration
	Seed    uint64
}

// choice is what a client does next: a pure function of its random draw and what it knows.
type choice struct {
	Kind OpKind
	// List is set for a LIST: its resourceVersion, match and page size.
	List          bool
	RV, Match     string
	Limit         int64
	Key           string
	Precondition  int64
	AbsentCreates bool
}

// known is what a client believes of each object: its resourceVersion when last seen (0: absent
// or unknown).
type known map[string]int64

// plan picks the next call from a draw in [0,1), a key index and what the client knows, with the
// newest resourceVersion it has seen for resourceVersion LISTs. The mix follows the issue:
// quorum and cached gets, CAS updates on the version the client saw, forced applies, deletes
// with preconditions, creates, and LISTs consistent, from the cache, exact and paged.
func plan(draw float64, key string, k known, seenRV int64) choice {
	rv := k[key]
	switch {
	case draw < 0.22:
		return choice{Kind: OpGet, Key: key}
	case draw < 0.30:
		return choice{Kind: OpGetCached, Key: key}
	case draw < 0.52:
		if rv == 0 {
			return choice{Kind: OpCreate, Key: key}
		}
		return choice{Kind: OpUpdate, Key: key, Precondition: rv}
	case draw < 0.62:
		return choice{Kind: OpApply, Key: key}
	case draw < 0.67:
		return choice{Kind: OpDelete, Key: key, Precondition: rv}
	case draw < 0.74:
		return choice{Kind: OpCreate, Key: key}
	}
	l := choice{List: true}
	switch {
	case draw < 0.80:
	case draw < 0.85:
		l.RV = "0"
	case draw < 0.90 && seenRV > 0:
		l.RV, l.Match = strconv.FormatInt(seenRV, 10), string(metav1.ResourceVersionMatchExact)
	case draw < 0.95 && seenRV > 0:
		l.RV, l.Match = strconv.FormatInt(seenRV, 10), string(metav1.ResourceVersionMatchNotOlderThan)
	default:
		l.Limit = 2
	}
	return l
}

// learn updates what the client knows from a call's outcome.
func learn(k known, op Op) {
	if op.Outcome != OutcomeOK {
		return
	}
	switch {
	case op.Kind == OpDelete:
		k[op.Key] = 0
	case op.Kind.IsWrite() || op.Found:
		k[op.Key] = op.RV
	default:
		k[op.Key] = 0
	}
}

// Run makes calls until ctx ends.
func (c *Client) Run(ctx context.Context, cfg TrafficConfig, clk clock.WithTicker) {
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(c.ID)))
	k := known{}
	var seenRV int64
	n := 0
	tick := clk.NewTicker(cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		ch := plan(rng.Float64(), cfg.Keys[rng.IntN(len(cfg.Keys))], k, seenRV)
		callCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		n++
		value := fmt.Sprintf("c%d-%d", c.ID, n)
		var op Op
		switch {
		case ch.List:
			if l := c.List(callCtx, ch.RV, ch.Match, ch.Limit); l.Outcome == OutcomeOK {
				seenRV = max(seenRV, l.RV)
			}
		case ch.Kind == OpGet || ch.Kind == OpGetCached:
			op = c.Get(callCtx, ch.Key, ch.Kind == OpGetCached)
		case ch.Kind == OpCreate:
			op = c.Create(callCtx, ch.Key, value)
		case ch.Kind == OpUpdate:
			op = c.Update(callCtx, ch.Key, value, ch.Precondition)
		case ch.Kind == OpApply:
			op = c.Apply(callCtx, ch.Key, value)
		case ch.Kind == OpDelete:
			op = c.Delete(callCtx, ch.Key, ch.Precondition)
		}
		cancel()
		if !ch.List {
			learn(k, op)
			seenRV = max(seenRV, op.RV)
		}
	}
}

// Informer is a client-go informer on the suite's objects, whose cache is compared with the
// final state.
type Informer struct {
	Client int
	inf    cache.SharedIndexInformer
}

// NewInformer builds an informer for namespace ns through cs.
func NewInformer(client int, cs kubernetes.Interface, ns string) *Informer {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = Label
			return cs.CoreV1().ConfigMaps(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = Label
			return cs.CoreV1().ConfigMaps(ns).Watch(ctx, o)
		},
	}
	return &Informer{Client: client, inf: cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})}
}

// Run runs the informer until ctx ends.
func (i *Informer) Run(ctx context.Context) { i.inf.RunWithContext(ctx) }

// State is the informer's cache now.
func (i *Informer) State() InformerState {
	s := InformerState{Client: i.Client, Synced: i.inf.HasSynced()}
	for _, o := range i.inf.GetStore().List() {
		cm := o.(*corev1.ConfigMap)
		s.Items = append(s.Items, Item{Key: cm.Name, Value: cm.Data[valueField], RV: parseRV(cm.ResourceVersion)})
	}
	sort.Slice(s.Items, func(a, b int) bool { return s.Items[a].Key < s.Items[b].Key })
	return s
}

// Matches says whether the informer's cache equals items.
func (s InformerState) Matches(items []Item) bool {
	if !s.Synced || len(s.Items) != len(items) {
		return false
	}
	want := map[string]Item{}
	for _, it := range items {
		want[it.Key] = it
	}
	for _, it := range s.Items {
		if want[it.Key] != it {
			return false
		}
	}
	return true
}
