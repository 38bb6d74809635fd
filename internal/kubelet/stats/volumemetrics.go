package stats

import (
	"cmp"
	"io"
	"slices"
	"strings"

	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// WriteVolumeMetrics renders the claims' volume usage in s in the Prometheus text format with
// Kubernetes' kubelet_volume_stats_* names (upstream's /metrics), labelled by namespace and
// persistentvolumeclaim; a claim mounted by several pods is reported once.
func WriteVolumeMetrics(w io.Writer, s statsv1alpha1.Summary) error {
	families := []*family{
		{name: "kubelet_volume_stats_available_bytes", kind: "gauge", help: "[ALPHA] Number of available bytes in the volume"},
		{name: "kubelet_volume_stats_capacity_bytes", kind: "gauge", help: "[ALPHA] Capacity in bytes of the volume"},
		{name: "kubelet_volume_stats_inodes", kind: "gauge", help: "[ALPHA] Maximum number of inodes in the volume"},
		{name: "kubelet_volume_stats_inodes_free", kind: "gauge", help: "[ALPHA] Number of free inodes in the volume"},
		{name: "kubelet_volume_stats_inodes_used", kind: "gauge", help: "[ALPHA] Number of used inodes in the volume"},
		{name: "kubelet_volume_stats_used_bytes", kind: "gauge", help: "[ALPHA] Number of used bytes in the volume"},
	}
	seen := map[statsv1alpha1.PVCReference]bool{}
	var vols []statsv1alpha1.VolumeStats
	for _, p := range s.Pods {
		for _, v := range p.VolumeStats {
			if v.PVCRef == nil || seen[*v.PVCRef] {
				continue
			}
			seen[*v.PVCRef] = true
			vols = append(vols, v)
		}
	}
	slices.SortFunc(vols, func(a, b statsv1alpha1.VolumeStats) int {
		return cmp.Or(strings.Compare(a.PVCRef.Namespace, b.PVCRef.Namespace), strings.Compare(a.PVCRef.Name, b.PVCRef.Name))
	})
	for _, v := range vols {
		labels := renderLabels("namespace", v.PVCRef.Namespace, "persistentvolumeclaim", v.PVCRef.Name)
		inodesUsed := v.InodesUsed
		if inodesUsed == nil && v.Inodes != nil && v.InodesFree != nil && *v.Inodes >= *v.InodesFree {
			used := *v.Inodes - *v.InodesFree
			inodesUsed = &used
		}
		for i, value := range []*uint64{v.AvailableBytes, v.CapacityBytes, v.Inodes, v.InodesFree, inodesUsed, v.UsedBytes} {
			if value != nil {
				families[i].samples = append(families[i].samples, sample{labels: labels, value: float64(*value)})
			}
		}
	}
	return writeFamilies(w, families)
}
