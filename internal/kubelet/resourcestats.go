package kubelet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/skiff-sh/skiff/internal/kubelet/cri"
	"github.com/skiff-sh/skiff/internal/kubelet/stats"
	"github.com/skiff-sh/skiff/internal/queryparam"
)

// nodeStatsState keeps the previous node sample, for the node's CPU rate in /stats/summary.
// The zero value is ready to use.
type nodeStatsState struct {
	mu   sync.Mutex
	prev *stats.NodeSample
}

// serveStatsSummary answers GET /stats/summary (?only_cpu_and_memory=true leaves out
// filesystems, networks and volumes), as upstream's kubelet.
func (s *server) serveStatsSummary(w http.ResponseWriter, r *http.Request) {
	summary, err := s.summary(r.Context(), queryparam.Bool(r.URL.Query(), "only_cpu_and_memory"))
	if err != nil {
		s.log.Warn("stats summary", "err", err)
		http.Error(w, fmt.Sprintf("Internal Error: failed to get node info: %v", err), http.StatusInternalServerError)
		return
	}
	body, err := json.MarshalIndent(summary, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// serveResourceMetrics answers GET /metrics/resource: the node's, pods' and containers' CPU and
// memory in the Prometheus text format. A runtime that cannot be read still gets an answer, with
// resource_scrape_error 1 and the node's own figures.
func (s *server) serveResourceMetrics(w http.ResponseWriter, r *http.Request) {
	summary, err := s.summary(r.Context(), true)
	scrapeErr := err != nil
	if err != nil {
		s.log.Warn("resource metrics", "err", err)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	if err := stats.WriteResourceMetrics(w, summary, scrapeErr); err != nil {
		s.log.Debug("write resource metrics", "err", err)
	}
}

// serveMetrics answers GET /metrics with the kubelet's own gauges (its node's name, running pods
// and containers) and the claims' volume usage (kubelet_volume_stats_*), the parts of
// Kubernetes' kubelet metrics that dashboards, alerts and e2e.test's metrics grabber read.
func (s *server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	in, err := s.summaryInputs(r.Context(), false)
	if err != nil {
		s.log.Warn("kubelet metrics", "err", err)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	if err := stats.WriteKubeletMetrics(w, s.nodeName, in.Sandboxes, in.Containers, err == nil); err != nil {
		s.log.Debug("write kubelet metrics", "err", err)
		return
	}
	if in.NodeName == "" {
		return // not even the node's own sample was read
	}
	if err := stats.WriteVolumeMetrics(w, stats.Summary(in)); err != nil {
		s.log.Debug("write volume metrics", "err", err)
	}
}

// summary reads the node's own view and the runtime's stats and builds the summary. On a runtime
// error the node part is still filled in.
func (s *server) summary(ctx context.Context, onlyCPUAndMemory bool) (statsv1alpha1.Summary, error) {
	in, err := s.summaryInputs(ctx, onlyCPUAndMemory)
	if in.NodeName == "" {
		return statsv1alpha1.Summary{}, err
	}
	return stats.Summary(in), err
}

// summaryInputs reads what a summary is built from: the node's own view, the live pods, the
// runtime's lists and stats and (unless onlyCPUAndMemory) the volumes' usage. When the node's
// own view cannot be read, the inputs are empty (NodeName ""); on a runtime error the rest is
// still filled in.
func (s *server) summaryInputs(ctx context.Context, onlyCPUAndMemory bool) (stats.Inputs, error) {
	node, boot, err := s.nodeSample(!onlyCPUAndMemory)
	if err != nil {
		return stats.Inputs{}, err
	}
	s.nodeStats.mu.Lock()
	prev := s.nodeStats.prev
	s.nodeStats.prev = &node
	s.nodeStats.mu.Unlock()
	in := stats.Inputs{NodeName: s.nodeName, NodeStartTime: boot, Node: node, PrevNode: prev, OnlyCPUAndMemory: onlyCPUAndMemory}

	in.Pods = s.pods.livePods()

	runtimeErr := s.runtimeStats(ctx, &in)
	if !onlyCPUAndMemory {
		in.Volumes = s.volumes.volumeUsage(ctx, in.Pods)
	}
	return in, runtimeErr
}

// runtimeStats fills in the runtime's lists and stats.
func (s *server) runtimeStats(ctx context.Context, in *stats.Inputs) error {
	statsService, ok := s.runtime.(cri.StatsService)
	if !ok {
		return errors.New("the container runtime serves no stats")
	}
	var err error
	if in.Sandboxes, err = s.runtime.ListPodSandbox(ctx, nil); err != nil {
		return err
	}
	if in.Containers, err = s.runtime.ListContainers(ctx, nil); err != nil {
		return err
	}
	if in.ContainerStats, err = statsService.ListContainerStats(ctx, nil); err != nil {
		return err
	}
	sandboxStats, err := statsService.ListPodSandboxStats(ctx, nil)
	// containerd 1.6 does not implement it (Unimplemented): pods' usage is then their containers' sum.
	if err != nil && status.Code(err) != codes.Unimplemented {
		s.log.Debug("pod sandbox stats", "err", err)
	}
	in.SandboxStats = sandboxStats
	return nil
}

// nodeSample reads the node's usage from the kernel. A node in a network namespace shares the
// host's kernel: CPU and memory are the host's, the network interfaces the namespace's.
func (s *server) nodeSample(withFsAndNetwork bool) (stats.NodeSample, time.Time, error) {
	now := s.clock.Now()
	procStat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return stats.NodeSample{}, time.Time{}, fmt.Errorf("node stats: %w", err)
	}
	cpu, err := stats.ParseProcStat(procStat)
	if err != nil {
		return stats.NodeSample{}, time.Time{}, fmt.Errorf("node stats: %w", err)
	}
	boot, _ := stats.ParseBootTime(procStat)
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return stats.NodeSample{}, time.Time{}, fmt.Errorf("node stats: %w", err)
	}
	mem, err := stats.ParseMeminfo(meminfo)
	if err != nil {
		return stats.NodeSample{}, time.Time{}, fmt.Errorf("node stats: %w", err)
	}
	sample := stats.NodeSample{Time: now, CPUNanoSeconds: cpu, Memory: mem}
	if withFsAndNetwork {
		sample.Fs = statFs(s.dataDir)
		if netDev, err := os.ReadFile("/proc/self/net/dev"); err == nil {
			sample.Interfaces, _ = stats.ParseNetDev(netDev)
		}
	}
	return sample, boot, nil
}

// diskUsage adds up the allocated size of the files under dir, as du does.
func diskUsage(dir string) uint64 {
	var total uint64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += uint64(st.Blocks) * 512
		}
		return nil
	})
	return total
}

func statFs(path string) *stats.FsInfo {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return nil
	}
	bsize := uint64(st.Bsize)
	return &stats.FsInfo{
		Capacity: st.Blocks * bsize, Available: st.Bavail * bsize, Used: (st.Blocks - st.Bfree) * bsize,
		Inodes: st.Files, InodesFree: st.Ffree,
	}
}
