package bench

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// FanoutOptions configure the watch fan-out measurement.
type FanoutOptions struct {
	Watchers     int
	Duration     time.Duration // how long the writer writes
	ContentType  string
	Namespace    string
	PayloadBytes int
	// SharedConnection multiplexes every watch over one HTTP/2 connection (one client process);
	// false gives each watcher its own TLS connection, as separate clients (kubelets, controllers)
	// have.
	SharedConnection bool
	// DrainTimeout bounds how long to wait, after the last write, for every watcher to see it.
	DrainTimeout time.Duration
	// Rate paces the writer (writes per second); 0 writes each object as soon as the previous one is
	// acknowledged.
	Rate float64
	// ServerCPU, when set, reads the server's CPU time so the result can show CPU per event.
	ServerCPU func() (time.Duration, error)
}

// FanoutResult is what the fan-out measurement observed.
type FanoutResult struct {
	Watchers  int
	Encoding  string
	Rate      float64 // the requested write rate (0: as fast as acknowledged)
	Writes    int
	WriteRate float64
	// Expected is Writes x Watchers; Delivered counts distinct (watcher, object) ADDED events seen.
	Expected  int
	Delivered int
	// Rewatches counts watches that ended early and were resumed from the last seen resourceVersion
	// (what an informer does); Failures counts watches that could not be resumed.
	Rewatches int
	Failures  int
	FirstErr  error
	Elapsed   time.Duration // first write to last delivery
	PerSecond float64       // Delivered / Elapsed
	// Delay is from the writer's acknowledgement of a create to a watcher receiving its event
	// (events that arrive before the acknowledgement count as 0).
	Delay latencySummary
	// ServerCPU is the server's CPU time from the first write until every watcher was done (0 when
	// not measured).
	ServerCPU time.Duration
}

type delivery struct {
	name string
	at   time.Time
}

// RunFanout starts Watchers watches on one namespace's ConfigMaps from a common resourceVersion,
// then creates ConfigMaps from one writer for Duration and records when each watcher receives each.
func RunFanout(ctx context.Context, cfg *rest.Config, opts FanoutOptions) (FanoutResult, error) {
	res := FanoutResult{Watchers: opts.Watchers, Encoding: contentTypeName(opts.ContentType), Rate: opts.Rate}
	writer, err := clientFor(cfg, opts.ContentType)
	if err != nil {
		return res, err
	}
	if err := ensureNamespace(ctx, writer, opts.Namespace); err != nil {
		return res, err
	}
	list, err := writer.CoreV1().ConfigMaps(opts.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return res, fmt.Errorf("list %s: %w", opts.Namespace, err)
	}
	startRV := list.ResourceVersion
	preexisting := make(map[string]bool, len(list.Items))
	for _, cm := range list.Items {
		preexisting[cm.Name] = true
	}

	watchCtx, stopWatchers := context.WithCancel(ctx)
	defer stopWatchers()
	watchers := make([]*fanoutWatcher, opts.Watchers)
	for i := range watchers {
		cs := writer
		if !opts.SharedConnection {
			if cs, err = separateConnectionClient(cfg, opts.ContentType); err != nil {
				return res, err
			}
		}
		w := &fanoutWatcher{client: cs, namespace: opts.Namespace, skip: preexisting}
		if err := w.start(watchCtx, startRV); err != nil {
			return res, fmt.Errorf("watcher %d: %w", i, err)
		}
		watchers[i] = w
	}

	cpuBefore, err := readCPU(opts.ServerCPU)
	if err != nil {
		return res, err
	}
	acks := map[string]time.Time{}
	start := time.Now()
	deadline := start.Add(opts.Duration)
	for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		if opts.Rate > 0 {
			next := start.Add(time.Duration(float64(i) / opts.Rate * float64(time.Second)))
			if wait := time.Until(next); wait > 0 {
				time.Sleep(wait)
			}
		}
		name := fmt.Sprintf("%s%d", fanoutPrefix, i)
		if _, err := writer.CoreV1().ConfigMaps(opts.Namespace).Create(ctx, configMap(opts.Namespace, name, opts.PayloadBytes), metav1.CreateOptions{}); err != nil {
			return res, fmt.Errorf("write %s: %w", name, err)
		}
		acks[name] = time.Now()
	}
	res.Writes = len(acks)
	res.WriteRate = float64(res.Writes) / time.Since(start).Seconds()
	res.Expected = res.Writes * opts.Watchers

	var wg sync.WaitGroup
	for _, w := range watchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.waitFor(res.Writes, opts.DrainTimeout)
		}()
	}
	wg.Wait()
	cpuAfter, err := readCPU(opts.ServerCPU)
	if err != nil {
		return res, err
	}
	res.ServerCPU = cpuAfter - cpuBefore
	stopWatchers()

	var delays []time.Duration
	var last time.Time
	for _, w := range watchers {
		d := w.result()
		res.Rewatches += d.rewatches
		res.Failures += d.failures
		if res.FirstErr == nil {
			res.FirstErr = d.err
		}
		for _, ev := range d.seen {
			ack, ok := acks[ev.name]
			if !ok {
				continue
			}
			res.Delivered++
			delays = append(delays, max(0, ev.at.Sub(ack)))
			if ev.at.After(last) {
				last = ev.at
			}
		}
	}
	res.Elapsed = last.Sub(start)
	if res.Elapsed > 0 {
		res.PerSecond = float64(res.Delivered) / res.Elapsed.Seconds()
	}
	res.Delay = summarize(delays)
	return res, ctx.Err()
}

func readCPU(read func() (time.Duration, error)) (time.Duration, error) {
	if read == nil {
		return 0, nil
	}
	d, err := read()
	if err != nil {
		return 0, fmt.Errorf("server CPU time: %w", err)
	}
	return d, nil
}

// separateConnectionClient builds a clientset with its own transport: client-go shares transports
// between identical configurations, but not between configurations with a Proxy function.
func separateConnectionClient(base *rest.Config, contentType string) (*kubernetes.Clientset, error) {
	cfg := rest.CopyConfig(base)
	cfg.Proxy = http.ProxyFromEnvironment
	return clientFor(cfg, contentType)
}

// fanoutWatcher is one watching client: it records when each ConfigMap's ADDED event arrives and
// resumes its watch from the last resourceVersion it saw when the server ends it.
type fanoutWatcher struct {
	client    kubernetes.Interface
	namespace string
	skip      map[string]bool

	mu        sync.Mutex
	seen      []delivery
	distinct  map[string]bool
	rewatches int
	failures  int
	err       error
	finished  bool
	changed   chan struct{}
}

type watcherData struct {
	seen      []delivery
	rewatches int
	failures  int
	err       error
}

func (w *fanoutWatcher) start(ctx context.Context, rv string) error {
	w.distinct = map[string]bool{}
	w.changed = make(chan struct{}, 1)
	wi, err := w.open(ctx, rv)
	if err != nil {
		return err
	}
	go w.run(ctx, wi, rv)
	return nil
}

func (w *fanoutWatcher) open(ctx context.Context, rv string) (watch.Interface, error) {
	return w.client.CoreV1().ConfigMaps(w.namespace).Watch(ctx, metav1.ListOptions{
		ResourceVersion: rv, AllowWatchBookmarks: true,
	})
}

func (w *fanoutWatcher) run(ctx context.Context, wi watch.Interface, rv string) {
	defer func() {
		w.mu.Lock()
		w.finished = true
		w.mu.Unlock()
		w.notify()
	}()
	for {
		closedEarly := w.consume(ctx, wi, &rv)
		wi.Stop()
		if !closedEarly || ctx.Err() != nil {
			return
		}
		next, err := w.open(ctx, rv)
		w.mu.Lock()
		if err != nil {
			w.failures++
			if w.err == nil {
				w.err = err
			}
			w.mu.Unlock()
			return
		}
		w.rewatches++
		w.mu.Unlock()
		wi = next
	}
}

// consume reads events until the watch ends; true means the server ended it (or sent an error).
func (w *fanoutWatcher) consume(ctx context.Context, wi watch.Interface, rv *string) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return true
			}
			now := time.Now()
			switch ev.Type {
			case watch.Error:
				w.mu.Lock()
				if w.err == nil {
					w.err = fmt.Errorf("watch error event: %v", ev.Object)
				}
				w.mu.Unlock()
				return true
			case watch.Bookmark:
				if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
					*rv = cm.ResourceVersion
				}
			case watch.Added:
				cm, ok := ev.Object.(*corev1.ConfigMap)
				if !ok {
					continue
				}
				*rv = cm.ResourceVersion
				// Only the writer's objects count: controllers add their own ConfigMaps to the
				// namespace (kube-root-ca.crt), which must not stand in for a missing write.
				if w.skip[cm.Name] || !strings.HasPrefix(cm.Name, fanoutPrefix) {
					continue
				}
				w.mu.Lock()
				if !w.distinct[cm.Name] {
					w.distinct[cm.Name] = true
					w.seen = append(w.seen, delivery{name: cm.Name, at: now})
				}
				w.mu.Unlock()
				w.notify()
			}
		}
	}
}

func (w *fanoutWatcher) notify() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// waitFor returns once the watcher has seen n objects or after timeout.
// fanoutPrefix names the writer's ConfigMaps.
const fanoutPrefix = "fanout-"

func (w *fanoutWatcher) waitFor(n int, timeout time.Duration) {
	deadline := time.After(timeout)
	for {
		w.mu.Lock()
		done := len(w.distinct) >= n || w.finished
		w.mu.Unlock()
		if done {
			return
		}
		select {
		case <-w.changed:
		case <-deadline:
			return
		}
	}
}

func (w *fanoutWatcher) result() watcherData {
	w.mu.Lock()
	defer w.mu.Unlock()
	return watcherData{seen: append([]delivery(nil), w.seen...), rewatches: w.rewatches, failures: w.failures, err: w.err}
}
