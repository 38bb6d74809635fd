package stats

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// family is one metric's help text, type and samples.
type family struct {
	name, help, kind string
	samples          []sample
}

type sample struct {
	labels string // rendered: {container="c",namespace="ns",pod="p"} or ""
	value  float64
	// at is the sample's time (omitted when zero).
	at time.Time
}

// WriteResourceMetrics renders s in the Prometheus text format with the kubelet's resource metric
// names (upstream's /metrics/resource): cumulative CPU seconds and working-set bytes of the node,
// each pod and each container, containers' start times, and scrape_error/resource_scrape_error
// (1 when the runtime's stats could not be read, scrapeErr).
func WriteResourceMetrics(w io.Writer, s statsv1alpha1.Summary, scrapeErr bool) error {
	families := []*family{
		{name: "container_cpu_usage_seconds_total", kind: "counter", help: "[STABLE] Cumulative cpu time consumed by the container in core-seconds"},
		{name: "container_memory_working_set_bytes", kind: "gauge", help: "[STABLE] Current working set of the container in bytes"},
		{name: "container_start_time_seconds", kind: "gauge", help: "[STABLE] Start time of the container since unix epoch in seconds"},
		{name: "node_cpu_usage_seconds_total", kind: "counter", help: "[STABLE] Cumulative cpu time consumed by the node in core-seconds"},
		{name: "node_memory_working_set_bytes", kind: "gauge", help: "[STABLE] Current working set of the node in bytes"},
		{name: "pod_cpu_usage_seconds_total", kind: "counter", help: "[STABLE] Cumulative cpu time consumed by the pod in core-seconds"},
		{name: "pod_memory_working_set_bytes", kind: "gauge", help: "[STABLE] Current working set of the pod in bytes"},
		{name: "resource_scrape_error", kind: "gauge", help: "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise"},
		{name: "scrape_error", kind: "gauge", help: "[ALPHA] 1 if there was an error while getting container metrics, 0 otherwise"},
	}
	containerCPU, containerMem, containerStart := families[0], families[1], families[2]
	nodeCPU, nodeMem, podCPU, podMem := families[3], families[4], families[5], families[6]

	if c := s.Node.CPU; c != nil && c.UsageCoreNanoSeconds != nil {
		nodeCPU.samples = append(nodeCPU.samples, sample{value: seconds(*c.UsageCoreNanoSeconds), at: c.Time.Time})
	}
	if m := s.Node.Memory; m != nil && m.WorkingSetBytes != nil {
		nodeMem.samples = append(nodeMem.samples, sample{value: float64(*m.WorkingSetBytes), at: m.Time.Time})
	}
	for _, p := range s.Pods {
		podLabels := renderLabels("namespace", p.PodRef.Namespace, "pod", p.PodRef.Name)
		if c := p.CPU; c != nil && c.UsageCoreNanoSeconds != nil {
			podCPU.samples = append(podCPU.samples, sample{labels: podLabels, value: seconds(*c.UsageCoreNanoSeconds), at: c.Time.Time})
		}
		if m := p.Memory; m != nil && m.WorkingSetBytes != nil {
			podMem.samples = append(podMem.samples, sample{labels: podLabels, value: float64(*m.WorkingSetBytes), at: m.Time.Time})
		}
		for _, c := range p.Containers {
			labels := renderLabels("container", c.Name, "namespace", p.PodRef.Namespace, "pod", p.PodRef.Name)
			if c.CPU != nil && c.CPU.UsageCoreNanoSeconds != nil {
				containerCPU.samples = append(containerCPU.samples, sample{labels: labels, value: seconds(*c.CPU.UsageCoreNanoSeconds), at: c.CPU.Time.Time})
			}
			if c.Memory != nil && c.Memory.WorkingSetBytes != nil {
				containerMem.samples = append(containerMem.samples, sample{labels: labels, value: float64(*c.Memory.WorkingSetBytes), at: c.Memory.Time.Time})
			}
			if !c.StartTime.IsZero() {
				start := float64(c.StartTime.UnixNano()) / 1e9
				containerStart.samples = append(containerStart.samples, sample{labels: labels, value: start, at: c.StartTime.Time})
			}
		}
	}
	errValue := 0.0
	if scrapeErr {
		errValue = 1
	}
	families[7].samples = []sample{{value: errValue}}
	families[8].samples = []sample{{value: errValue}}

	return writeFamilies(w, families)
}

// writeFamilies writes families in the Prometheus text format.
func writeFamilies(w io.Writer, families []*family) error {
	var b strings.Builder
	for _, f := range families {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.kind)
		for _, s := range f.samples {
			b.WriteString(f.name)
			b.WriteString(s.labels)
			b.WriteByte(' ')
			b.WriteString(strconv.FormatFloat(s.value, 'g', -1, 64))
			if !s.at.IsZero() {
				b.WriteByte(' ')
				b.WriteString(strconv.FormatInt(s.at.UnixMilli(), 10))
			}
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func seconds(nanos uint64) float64 { return float64(nanos) / 1e9 }

// renderLabels renders name/value pairs (names in order) as a Prometheus label set.
func renderLabels(pairs ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(pairs); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(pairs[i])
		b.WriteString(`="`)
		b.WriteString(escapeLabel(pairs[i+1]))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

func escapeLabel(v string) string {
	if !strings.ContainsAny(v, "\\\n\"") {
		return v // the usual case: names and namespaces need no escaping
	}
	var b strings.Builder
	for _, c := range v {
		switch c {
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '"':
			b.WriteString(`\"`)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}
