package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// MemoryOptions tune RunMemory.
type MemoryOptions struct {
	Pods        int
	Namespace   string
	Concurrency int
	// Settle is how long to wait after loading before the settled figures are read.
	Settle time.Duration
	// Lists is how many JSON LISTs of all pods to time after settling (0: none).
	Lists int
	// HeapProfile, when set, is a file the server's heap profile (after settling) is written to.
	HeapProfile string
	// Progress, when set, gets a line per 1,000 pods loaded.
	Progress func(string)
}

// ProcMemory is a process's memory as /proc/<pid>/status reports it, in bytes.
type ProcMemory struct {
	VmRSS, RssAnon, RssFile, VmHWM int64
}

// GoMemory is a Go server's heap split, from its /metrics (go_memstats_*, bytes).
type GoMemory struct {
	HeapAlloc, HeapInuse, HeapIdle, HeapReleased, NextGC, Sys, StackInuse, GCSys, OtherSys int64
	// MemoryLimit is go_gc_gomemlimit_bytes when exposed (-1: not exposed).
	MemoryLimit int64
}

// MemoryResult is one server's figures under RunMemory.
type MemoryResult struct {
	Target   string
	LoadTime time.Duration
	// PeakRSS is the highest VmRSS sampled every 250 ms from the first create until settled.
	PeakRSS int64
	// Loaded is right after the last create; Settled after opts.Settle; AfterLists after the LISTs.
	Loaded, Settled, AfterLists ProcMemory
	GoSettled                   GoMemory
	// LiveHeap is the heap allocated right after a forced collection (after Settled was read).
	LiveHeap         int64
	ListP50, ListP99 time.Duration
	LoadAvgEnd       string
}

// RunMemory loads opts.Pods listbench pods into a skiff server (pid) at opts.Concurrency, samples
// its RSS throughout, and reads the settled memory split.
func RunMemory(ctx context.Context, t ListTarget, opts MemoryOptions) (MemoryResult, error) {
	res := MemoryResult{Target: t.Name}
	cs, err := podNamespaceClient(ctx, t, opts.Namespace)
	if err != nil {
		return res, err
	}
	pid := t.APIServerPID
	var peak atomic.Int64
	done := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if v := rssOf(pid); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	defer func() {
		select {
		case <-done:
		default:
			close(done)
		}
		sampler.Wait()
	}()

	start := time.Now()
	if err := loadPodsProgress(ctx, cs, ListOptions{Pods: opts.Pods, Namespace: opts.Namespace, Concurrency: opts.Concurrency}, opts.Progress); err != nil {
		return res, err
	}
	res.LoadTime = time.Since(start)
	res.Loaded = procMemory(pid)
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(opts.Settle):
	}
	res.Settled = procMemory(pid)
	if g, err := goMemory(ctx, cs); err == nil {
		res.GoSettled = g
	} else {
		return res, err
	}
	// The heap profile with gc=1 runs a collection first: the heap allocated right after it is
	// what is live; the rest of the settled heap was garbage awaiting the collector.
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(ctx)
	if err != nil {
		return res, fmt.Errorf("heap profile: %w", err)
	}
	if opts.HeapProfile != "" {
		if err := os.WriteFile(opts.HeapProfile, raw, 0o644); err != nil {
			return res, fmt.Errorf("write heap profile: %w", err)
		}
	}
	if g, err := goMemory(ctx, cs); err == nil {
		res.LiveHeap = g.HeapAlloc
	}
	if opts.Lists > 0 {
		samples := make([]time.Duration, 0, opts.Lists)
		for range opts.Lists {
			s := time.Now()
			if _, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/pods").SetHeader("Accept", "application/json").DoRaw(ctx); err != nil {
				return res, fmt.Errorf("list pods: %w", err)
			}
			samples = append(samples, time.Since(s))
		}
		l := summarize(samples)
		res.ListP50, res.ListP99 = l.P50, l.P99
		res.AfterLists = procMemory(pid)
	}
	close(done)
	sampler.Wait()
	res.PeakRSS = peak.Load()
	res.LoadAvgEnd = loadAvg()
	return res, nil
}

// loadPodsProgress creates opts.Pods bench pods with opts.Concurrency writers, telling progress (when
// set) every 1,000.
func loadPodsProgress(ctx context.Context, cs kubernetes.Interface, opts ListOptions, progress func(string)) error {
	var next, created atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, opts.Concurrency)
	for range opts.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= opts.Pods || ctx.Err() != nil {
					return
				}
				_, err := cs.CoreV1().Pods(opts.Namespace).Create(ctx, benchPod(opts.Namespace, i), metav1.CreateOptions{})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- fmt.Errorf("create pod %d: %w", i, err)
					return
				}
				if n := created.Add(1); progress != nil && n%1000 == 0 {
					progress(fmt.Sprintf("%d pods", n))
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// procMemory reads VmRSS, RssAnon, RssFile and VmHWM of pid (zeros when unknown).
func procMemory(pid int) ProcMemory {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ProcMemory{}
	}
	return parseProcStatusMemory(string(raw))
}

// parseProcStatusMemory reads the memory lines of a /proc/<pid>/status text.
func parseProcStatusMemory(status string) ProcMemory {
	var m ProcMemory
	fields := map[string]*int64{"VmRSS:": &m.VmRSS, "RssAnon:": &m.RssAnon, "RssFile:": &m.RssFile, "VmHWM:": &m.VmHWM}
	for _, line := range strings.Split(status, "\n") {
		key, rest, ok := strings.Cut(line, "\t")
		if !ok {
			key, rest, ok = strings.Cut(line, " ")
		}
		dst, known := fields[strings.TrimSpace(key)]
		if !ok || !known {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err == nil {
			*dst = kb << 10
		}
	}
	return m
}

// goMemory reads the heap split from the server's /metrics.
func goMemory(ctx context.Context, cs kubernetes.Interface) (GoMemory, error) {
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return GoMemory{}, fmt.Errorf("metrics: %w", err)
	}
	return parseGoMemory(string(body)), nil
}

func parseGoMemory(text string) GoMemory {
	g := GoMemory{MemoryLimit: -1}
	fields := map[string]*int64{
		"go_memstats_heap_alloc_bytes":    &g.HeapAlloc,
		"go_memstats_heap_inuse_bytes":    &g.HeapInuse,
		"go_memstats_heap_idle_bytes":     &g.HeapIdle,
		"go_memstats_heap_released_bytes": &g.HeapReleased,
		"go_memstats_next_gc_bytes":       &g.NextGC,
		"go_memstats_sys_bytes":           &g.Sys,
		"go_memstats_stack_inuse_bytes":   &g.StackInuse,
		"go_memstats_gc_sys_bytes":        &g.GCSys,
		"go_memstats_other_sys_bytes":     &g.OtherSys,
		"go_gc_gomemlimit_bytes":          &g.MemoryLimit,
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if dst, known := fields[name]; known {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				*dst = int64(f)
			}
		}
	}
	return g
}
