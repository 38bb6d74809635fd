package metricsserver

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Sample is one cumulative CPU and one memory reading at one instant.
type Sample struct {
	Time time.Time
	// CPU is the cumulative CPU time in core-seconds.
	CPU float64
	// Memory is the working set in bytes.
	Memory uint64
	// StartTime is when a container started (zero for nodes and unknown).
	StartTime time.Time
}

// ContainerKey names one container of one pod.
type ContainerKey struct {
	Namespace, Pod, Container string
}

// Batch is one node's scrape: the node's own sample (nil when the kubelet gave none) and its
// containers'.
type Batch struct {
	Node       string
	NodeSample *Sample
	Containers map[ContainerKey]Sample
}

// partial collects the metrics of one series until every one it needs is seen.
type partial struct {
	cpu, mem         bool
	cpuTime, memTime time.Time
	Sample
}

// ParseResourceMetrics reads a kubelet's /metrics/resource answer (Prometheus text format) into a
// batch. Samples without a timestamp are stamped with scrapeTime. Only series with both a CPU and
// a memory reading are kept; a CPU reading's time is the sample's time.
func ParseResourceMetrics(node string, data []byte, scrapeTime time.Time) (Batch, error) {
	b := Batch{Node: node, Containers: map[ContainerKey]Sample{}}
	var nodeSeries partial
	containers := map[ContainerKey]*partial{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		name, labels, value, at, err := parseLine(text)
		if err != nil {
			return b, fmt.Errorf("node %s: resource metrics line %d: %w", node, line, err)
		}
		if at.IsZero() {
			at = scrapeTime
		}
		var p *partial
		switch {
		case strings.HasPrefix(name, "node_"):
			p = &nodeSeries
		case strings.HasPrefix(name, "container_"):
			key := ContainerKey{Namespace: labels["namespace"], Pod: labels["pod"], Container: labels["container"]}
			if key.Pod == "" || key.Container == "" {
				continue
			}
			if p = containers[key]; p == nil {
				p = &partial{}
				containers[key] = p
			}
		default:
			continue
		}
		switch strings.TrimPrefix(strings.TrimPrefix(name, "node_"), "container_") {
		case "cpu_usage_seconds_total":
			p.cpu, p.CPU, p.cpuTime = true, value, at
		case "memory_working_set_bytes":
			if value < 0 {
				value = 0
			}
			p.mem, p.Memory, p.memTime = true, uint64(value), at
		case "start_time_seconds":
			sec, frac := splitSeconds(value)
			p.StartTime = time.Unix(sec, frac)
		}
	}
	if err := sc.Err(); err != nil {
		return b, fmt.Errorf("node %s: read resource metrics: %w", node, err)
	}
	if nodeSeries.cpu && nodeSeries.mem {
		s := nodeSeries.Sample
		s.Time = nodeSeries.cpuTime
		b.NodeSample = &s
	}
	for key, p := range containers {
		if p.cpu && p.mem {
			s := p.Sample
			s.Time = p.cpuTime
			b.Containers[key] = s
		}
	}
	return b, nil
}

func splitSeconds(v float64) (int64, int64) {
	sec := int64(v)
	return sec, int64((v - float64(sec)) * 1e9)
}

// parseLine reads `name{l="v",...} value [timestamp_ms]`.
func parseLine(text string) (string, map[string]string, float64, time.Time, error) {
	var labels map[string]string
	name := text
	rest := ""
	if i := strings.IndexAny(text, "{ "); i >= 0 {
		name, rest = text[:i], text[i:]
	}
	if strings.HasPrefix(rest, "{") {
		end, parsed, err := parseLabels(rest)
		if err != nil {
			return "", nil, 0, time.Time{}, err
		}
		labels, rest = parsed, rest[end:]
	}
	fields := strings.Fields(rest)
	if len(fields) < 1 || len(fields) > 2 {
		return "", nil, 0, time.Time{}, fmt.Errorf("%q: want a value and an optional timestamp", text)
	}
	value, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", nil, 0, time.Time{}, fmt.Errorf("%q: value: %w", text, err)
	}
	var at time.Time
	if len(fields) == 2 {
		ms, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return "", nil, 0, time.Time{}, fmt.Errorf("%q: timestamp: %w", text, err)
		}
		at = time.UnixMilli(ms)
	}
	return name, labels, value, at, nil
}

// parseLabels reads a label set starting at s[0] == '{' and returns the index after '}'.
func parseLabels(s string) (int, map[string]string, error) {
	labels := map[string]string{}
	i := 1
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == ',') {
			i++
		}
		if i >= len(s) {
			return 0, nil, fmt.Errorf("%q: unterminated label set", s)
		}
		if s[i] == '}' {
			return i + 1, labels, nil
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 || i+eq+1 >= len(s) || s[i+eq+1] != '"' {
			return 0, nil, fmt.Errorf("%q: bad label", s)
		}
		key := strings.TrimSpace(s[i : i+eq])
		i += eq + 2
		var v strings.Builder
		for {
			if i >= len(s) {
				return 0, nil, fmt.Errorf("%q: unterminated label value", s)
			}
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				switch s[i+1] {
				case 'n':
					v.WriteByte('\n')
				default:
					v.WriteByte(s[i+1])
				}
				i += 2
				continue
			}
			i++
			if c == '"' {
				break
			}
			v.WriteByte(c)
		}
		labels[key] = v.String()
	}
}
