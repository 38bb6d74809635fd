package fakecri

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiff-sh/skiff/internal/kubelet/cri"
)

// Usage every running fake container reports: a tenth of a core since it started, and a fixed
// working set.
const (
	FakeNanoCores       = 100_000_000
	FakeWorkingSetBytes = 4 << 20
)

var _ cri.StatsService = (*Runtime)(nil)

// ListContainerStats reports every running container's usage: FakeNanoCores since it started
// (by the runtime's clock) and FakeWorkingSetBytes.
func (r *Runtime) ListContainerStats(_ context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	var out []*runtimeapi.ContainerStats
	for id, c := range r.containers {
		if c.status.State != runtimeapi.ContainerState_CONTAINER_RUNNING || (filter.GetId() != "" && filter.GetId() != id) {
			continue
		}
		elapsed := now.Sub(time.Unix(0, c.status.StartedAt))
		stats := &runtimeapi.ContainerStats{
			Attributes: &runtimeapi.ContainerAttributes{Id: id, Metadata: c.status.Metadata, Labels: c.status.Labels, Annotations: c.status.Annotations},
			Cpu: &runtimeapi.CpuUsage{Timestamp: now.UnixNano(), UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: uint64(elapsed.Seconds() * FakeNanoCores)},
				UsageNanoCores: &runtimeapi.UInt64Value{Value: FakeNanoCores}},
			Memory: &runtimeapi.MemoryUsage{Timestamp: now.UnixNano(), WorkingSetBytes: &runtimeapi.UInt64Value{Value: FakeWorkingSetBytes}},
		}
		if used, ok := r.writable[id]; ok {
			stats.WritableLayer = &runtimeapi.FilesystemUsage{Timestamp: now.UnixNano(), UsedBytes: &runtimeapi.UInt64Value{Value: used}}
		}
		out = append(out, stats)
	}
	return out, nil
}

// ListPodSandboxStats is unimplemented, as in containerd 1.6.
func (r *Runtime) ListPodSandboxStats(context.Context, *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	return nil, status.Error(codes.Unimplemented, "ListPodSandboxStats is not implemented")
}

// SetWritableLayer makes ListContainerStats report the container's writable layer at used bytes.
func (r *Runtime) SetWritableLayer(containerID string, used uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writable[containerID] = used
}
