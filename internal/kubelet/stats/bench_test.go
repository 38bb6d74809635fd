package stats

import (
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// BenchmarkResourceMetrics is the kubelet's side of one scrape of /metrics/resource, CRI reads
// aside: building the summary of pods pods of one container each and rendering it.
func BenchmarkResourceMetrics(b *testing.B) {
	for _, pods := range []int{10, 110} {
		b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) {
			in := Inputs{NodeName: "n1", Node: NodeSample{Time: t0, CPUNanoSeconds: 1e12, Memory: Meminfo{Total: 8 << 30, Available: 4 << 30}}, OnlyCPUAndMemory: true}
			for i := 0; i < pods; i++ {
				uid, sb, id := fmt.Sprintf("u%d", i), fmt.Sprintf("s%d", i), fmt.Sprintf("c%d", i)
				in.Pods = append(in.Pods, pod("bench", fmt.Sprintf("pod-%d", i), uid))
				in.Sandboxes = append(in.Sandboxes, sandbox(sb, uid, runtimeapi.PodSandboxState_SANDBOX_READY, t0))
				in.Containers = append(in.Containers, ctr(id, sb, uid, "app", runtimeapi.ContainerState_CONTAINER_RUNNING, t0.Add(-time.Hour)))
				in.ContainerStats = append(in.ContainerStats, cstats(id, uint64(i)*1e9, 0, 1<<20, t0))
			}
			b.ReportAllocs()
			start := processCPU(b)
			for i := 0; i < b.N; i++ {
				if err := WriteResourceMetrics(io.Discard, Summary(in), false); err != nil {
					b.Fatal(err)
				}
			}
			// CPU time per operation, which unlike ns/op does not grow with the machine's load.
			b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
