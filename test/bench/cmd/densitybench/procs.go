package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skiff-sh/skiff/test/bench"
)

// proc is one process whose memory and CPU the benchmark follows.
type proc struct {
	name string
	pid  int
	// controlPlane processes count toward the control plane's total.
	controlPlane bool
}

// usage is what one process used over the measurement.
type usage struct {
	name         string
	controlPlane bool
	peakRSS      int64 // bytes
	cpu          time.Duration
}

// sampler reads every followed process's RSS (VmRSS) and CPU time from /proc each interval,
// keeping each one's peak and the peak of the control plane's sum.
type sampler struct {
	mu       sync.Mutex
	procs    []proc
	cpu0     map[int]time.Duration
	peak     map[int]int64
	last     map[int]time.Duration
	peakSum  int64
	stop     chan struct{}
	done     chan struct{}
	interval time.Duration
}

func newSampler(procs []proc, interval time.Duration) *sampler {
	s := &sampler{procs: procs, cpu0: map[int]time.Duration{}, peak: map[int]int64{}, last: map[int]time.Duration{},
		stop: make(chan struct{}), done: make(chan struct{}), interval: interval}
	for _, p := range procs {
		if cpu, err := bench.ProcessCPU(p.pid); err == nil {
			s.cpu0[p.pid] = cpu
		}
	}
	go s.loop()
	return s
}

func (s *sampler) loop() {
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		s.sample()
		select {
		case <-s.stop:
			s.sample()
			return
		case <-t.C:
		}
	}
}

func (s *sampler) sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum int64
	for _, p := range s.procs {
		rss, err := procRSS(p.pid)
		if err != nil {
			continue
		}
		s.peak[p.pid] = max(s.peak[p.pid], rss)
		if p.controlPlane {
			sum += rss
		}
		if cpu, err := bench.ProcessCPU(p.pid); err == nil {
			s.last[p.pid] = cpu
		}
	}
	s.peakSum = max(s.peakSum, sum)
}

// peakSoFar is the control plane's peak summed RSS until now.
func (s *sampler) peakSoFar() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peakSum
}

// finish stops sampling and returns each process's peak RSS and CPU time since the start, and
// the peak of the control plane's summed RSS.
func (s *sampler) finish() ([]usage, int64) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]usage, 0, len(s.procs))
	for _, p := range s.procs {
		out = append(out, usage{name: p.name, controlPlane: p.controlPlane, peakRSS: s.peak[p.pid], cpu: s.last[p.pid] - s.cpu0[p.pid]})
	}
	return out, s.peakSum
}

// procRSS is a process's resident set size from /proc/<pid>/status.
func procRSS(pid int) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmRSS %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}
