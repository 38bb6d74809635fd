package stats

import (
	"strings"
	"testing"

	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func TestWriteVolumeMetrics(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	claim := func(name string) *statsv1alpha1.PVCReference {
		return &statsv1alpha1.PVCReference{Namespace: "ns", Name: name}
	}
	data := statsv1alpha1.VolumeStats{Name: "data", PVCRef: claim("data"), FsStats: statsv1alpha1.FsStats{
		AvailableBytes: u(700), CapacityBytes: u(1000), UsedBytes: u(300), Inodes: u(10), InodesFree: u(4),
	}}
	s := statsv1alpha1.Summary{Pods: []statsv1alpha1.PodStats{
		{VolumeStats: []statsv1alpha1.VolumeStats{data, {Name: "scratch", FsStats: statsv1alpha1.FsStats{UsedBytes: u(1)}}}},
		// A second pod of the same claim is not counted twice.
		{VolumeStats: []statsv1alpha1.VolumeStats{data, {Name: "logs", PVCRef: claim("a-logs"), FsStats: statsv1alpha1.FsStats{UsedBytes: u(5)}}}},
	}}
	var b strings.Builder
	if err := WriteVolumeMetrics(&b, s); err != nil {
		t.Fatal(err)
	}
	want := `# HELP kubelet_volume_stats_available_bytes [ALPHA] Number of available bytes in the volume
# TYPE kubelet_volume_stats_available_bytes gauge
kubelet_volume_stats_available_bytes{namespace="ns",persistentvolumeclaim="data"} 700
# HELP kubelet_volume_stats_capacity_bytes [ALPHA] Capacity in bytes of the volume
# TYPE kubelet_volume_stats_capacity_bytes gauge
kubelet_volume_stats_capacity_bytes{namespace="ns",persistentvolumeclaim="data"} 1000
# HELP kubelet_volume_stats_inodes [ALPHA] Maximum number of inodes in the volume
# TYPE kubelet_volume_stats_inodes gauge
kubelet_volume_stats_inodes{namespace="ns",persistentvolumeclaim="data"} 10
# HELP kubelet_volume_stats_inodes_free [ALPHA] Number of free inodes in the volume
# TYPE kubelet_volume_stats_inodes_free gauge
kubelet_volume_stats_inodes_free{namespace="ns",persistentvolumeclaim="data"} 4
# HELP kubelet_volume_stats_inodes_used [ALPHA] Number of used inodes in the volume
# TYPE kubelet_volume_stats_inodes_used gauge
kubelet_volume_stats_inodes_used{namespace="ns",persistentvolumeclaim="data"} 6
# HELP kubelet_volume_stats_used_bytes [ALPHA] Number of used bytes in the volume
# TYPE kubelet_volume_stats_used_bytes gauge
kubelet_volume_stats_used_bytes{namespace="ns",persistentvolumeclaim="a-logs"} 5
kubelet_volume_stats_used_bytes{namespace="ns",persistentvolumeclaim="data"} 300
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
