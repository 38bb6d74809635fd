package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skiff-sh/skiff/test/bench"
)

// nodeProcess is one process of the node: skiff itself, its containerd, or a shim. They are
// found by their command lines, which all name the node's data dir (skiff's --data-dir,
// containerd's --config, the shims' -address); the containers' own processes do not, and are the
// workload rather than the node's overhead.
type nodeProcess struct {
	pid  int
	kind string // skiff, containerd or shim
	// cpu is the process's own CPU time; childCPU that of its reaped children (runc for the
	// shims; the CNI plugins, their iptables runs and the shims' start commands for containerd).
	cpu, childCPU time.Duration
	rss           int64 // bytes
	// pss is the proportional share of memory: shared pages (the shims' common binary) divided
	// among the processes mapping them, so the sum over processes does not count them 100 times.
	pss int64
}

func nodeProcesses(dataDir string) []nodeProcess {
	entries, _ := os.ReadDir("/proc")
	var out []nodeProcess
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(raw), dataDir) {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		p := nodeProcess{pid: pid, kind: processKind(filepath.Base(args[0]))}
		p.cpu, p.childCPU, _ = processCPU(pid)
		p.rss, _ = statusField(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:")
		p.pss, _ = statusField(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:")
		out = append(out, p)
	}
	return out
}

func processKind(command string) string {
	switch {
	case strings.HasPrefix(command, "containerd-shim"):
		return "shim"
	case command == "containerd":
		return "containerd"
	case command == "skiff":
		return "skiff"
	}
	return command
}

// processCPU is user + system time from /proc/PID/stat (fields 14 and 15, counted after the
// command name, which may hold spaces) plus that of its reaped children (fields 16 and 17):
// runc and the CNI plugins are short-lived children of the shims and containerd, and their
// CPU is part of what a pod costs the node.
func processCPU(pid int) (own, children time.Duration, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	stat := string(raw)
	fields := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	if len(fields) < 15 {
		return 0, 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	var ticks [4]int64
	for i, f := range fields[11:15] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, 0, err
		}
		ticks[i] = n
	}
	const userHZ = 100
	return time.Duration(ticks[0]+ticks[1]) * time.Second / userHZ, time.Duration(ticks[2]+ticks[3]) * time.Second / userHZ, nil
}

// statusField reads a "Name:   123 kB" line of a /proc file, in bytes.
func statusField(path, name string) (int64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in %s", name, path)
}

// nodeCPU is the CPU time the node's live processes have used so far, by kind; a kind's reaped
// children count under childrenOf(kind).
func nodeCPU(dataDir string) map[string]time.Duration {
	byKind := map[string]time.Duration{}
	for _, p := range nodeProcesses(dataDir) {
		byKind[p.kind] += p.cpu
		byKind[childrenOf(p.kind)] += p.childCPU
	}
	return byKind
}

func childrenOf(kind string) string { return kind + " children" }

// cpuRows name the CPU split podbench reports, in order: each process kind, then what its
// short-lived children used.
var cpuRows = []struct{ key, what string }{ //nolint:gochecknoglobals // constant table.
	{"skiff", "skiff (API server, etcd, controllers, scheduler, kubelet)"},
	{childrenOf("skiff"), "skiff's children (iptables of the proxy, containerd's start)"},
	{"containerd", "containerd"},
	{childrenOf("containerd"), "containerd's children: CNI plugins (with their iptables runs), shim start"},
	{"shim", "shims"},
	{childrenOf("shim"), "shims' children: runc (or crun)"},
}

// nodeSample is the node's footprint over a window: CPU used per kind, RSS at the end.
type nodeSample struct {
	window time.Duration
	cpu    map[string]time.Duration
	rss    map[string]int64
	pss    map[string]int64
	count  map[string]int
}

func sampleNode(ctx context.Context, dataDir string, window time.Duration) (nodeSample, error) {
	before := map[int]time.Duration{}
	for _, p := range nodeProcesses(dataDir) {
		before[p.pid] = p.cpu + p.childCPU
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return nodeSample{}, ctx.Err()
	case <-time.After(window):
	}
	s := nodeSample{window: time.Since(start), cpu: map[string]time.Duration{}, rss: map[string]int64{}, pss: map[string]int64{}, count: map[string]int{}}
	for _, p := range nodeProcesses(dataDir) {
		s.cpu[p.kind] += p.cpu + p.childCPU - before[p.pid]
		s.rss[p.kind] += p.rss
		s.pss[p.kind] += p.pss
		s.count[p.kind]++
	}
	return s, nil
}

// machineCPU reads the first line of /proc/stat: CPU time used by everything on the machine and
// the total elapsed over all CPUs, so a window's busy fraction shows whether the node had the
// cores to itself.
func machineCPU() (busy, total time.Duration) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	fields := strings.Fields(line)
	const userHZ = 100
	for i, f := range fields[1:] {
		n, _ := strconv.ParseInt(f, 10, 64)
		d := time.Duration(n) * time.Second / userHZ
		total += d
		if i != 3 && i != 4 { // idle and iowait
			busy += d
		}
	}
	return busy, total
}

func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}

// processesMentioning lists live processes whose command line contains s.
func processesMentioning(s string) []string {
	var out []string
	for _, p := range nodeProcesses(s) {
		raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.pid))
		out = append(out, strconv.Itoa(p.pid)+": "+strings.ReplaceAll(string(raw), "\x00", " "))
	}
	return out
}

type report struct {
	machine                bench.Machine
	label                  string
	pods, concurrency      int
	loadBefore, loadDuring string
	burst, sequential      stages
	burstWall, deleteWall  time.Duration
	burstCPU               time.Duration
	burstCPUByKind         map[string]time.Duration
	sequentialCPU          time.Duration
	sequentialCPUByKind    map[string]time.Duration
	// execs counts the programs run for traced pods (by name), traced how many pods.
	execs  map[string]int
	traced int
	// machineBusy and machineTotal are all CPUs' busy and elapsed time during the burst.
	machineBusy, machineTotal time.Duration
	steady                    nodeSample
}

func (r report) write(w io.Writer) {
	fmt.Fprintf(w, "Machine: %s\n", r.machine)
	fmt.Fprintf(w, "Load average before: %s; with the pods running: %s\n", r.loadBefore, r.loadDuring)
	if r.label != "" {
		fmt.Fprintf(w, "Label: %s\n", r.label)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Pod startup (create -> Running seen by a watch) | pods | p50 | p99 | max |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	row := func(what string, samples []time.Duration) {
		p50, p99, maximum := summarize(samples)
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s |\n", what, len(samples), ms(p50), ms(p99), ms(maximum))
	}
	row(fmt.Sprintf("%d at once (%d parallel creates)", r.pods, r.concurrency), r.burst.running)
	if len(r.sequential.running) > 0 {
		row("one after another", r.sequential.running)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Where the time goes (create -> first watch event showing it):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Stage | pods | p50 | p99 | max |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	row("at once: scheduled (spec.nodeName)", r.burst.scheduled)
	row("at once: kubelet's first status (status.startTime)", r.burst.acknowledged)
	row("at once: Running", r.burst.running)
	if len(r.sequential.running) > 0 {
		row("one after another: scheduled", r.sequential.scheduled)
		row("one after another: kubelet's first status", r.sequential.acknowledged)
		row("one after another: Running", r.sequential.running)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "All %d pods Running %s after the first create; the node (skiff, containerd, shims, and the runc and CNI processes they ran) used %s of CPU meanwhile, %s per pod; deleting them took %s.\n",
		r.pods, r.burstWall.Round(10*time.Millisecond), r.burstCPU.Round(10*time.Millisecond), (r.burstCPU / time.Duration(r.pods)).Round(time.Millisecond), r.deleteWall.Round(10*time.Millisecond))
	fmt.Fprintf(w, "Of that: skiff %s (API server, etcd, controllers, scheduler, kubelet), containerd with the CNI plugins %s, shims with runc %s.\n",
		(r.burstCPUByKind["skiff"] + r.burstCPUByKind[childrenOf("skiff")]).Round(10*time.Millisecond),
		(r.burstCPUByKind["containerd"] + r.burstCPUByKind[childrenOf("containerd")]).Round(10*time.Millisecond),
		(r.burstCPUByKind["shim"] + r.burstCPUByKind[childrenOf("shim")]).Round(10*time.Millisecond))
	if n := len(r.sequential.running); n > 0 {
		fmt.Fprintf(w, "One after another, the node used %s of CPU per pod.\n", (r.sequentialCPU / time.Duration(n)).Round(time.Millisecond))
	}
	fmt.Fprintf(w, "During the burst the machine's CPUs were %.0f%% busy (everything running on it), the node's share of the machine's CPU time was %.0f%%.\n",
		100*float64(r.machineBusy)/float64(max(r.machineTotal, 1)), 100*float64(r.burstCPU)/float64(max(r.machineTotal, 1)))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| CPU per pod, by process | at once | one after another |")
	fmt.Fprintln(w, "|---|---:|---:|")
	perPod := func(d time.Duration, n int) string {
		if n == 0 {
			return "-"
		}
		return ms(d / time.Duration(n))
	}
	for _, row := range cpuRows {
		fmt.Fprintf(w, "| %s | %s | %s |\n", row.what, perPod(r.burstCPUByKind[row.key], r.pods), perPod(r.sequentialCPUByKind[row.key], len(r.sequential.running)))
	}
	fmt.Fprintf(w, "| total | %s | %s |\n", perPod(r.burstCPU, r.pods), perPod(r.sequentialCPU, len(r.sequential.running)))
	if r.traced > 0 {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Programs run per pod (strace following containerd over %d pods started one after another and deleted):\n\n", r.traced)
		fmt.Fprintln(w, "| program | runs per pod |")
		fmt.Fprintln(w, "|---|---:|")
		names := make([]string, 0, len(r.execs))
		total := 0
		for name, n := range r.execs {
			names = append(names, name)
			total += n
		}
		slices.Sort(names)
		for _, name := range names {
			fmt.Fprintf(w, "| %s | %.1f |\n", name, float64(r.execs[name])/float64(r.traced))
		}
		fmt.Fprintf(w, "| total | %.1f |\n", float64(total)/float64(r.traced))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "| Node with %d pods running (%s window) | processes | CPU (%% of one core) | RSS (MiB) | PSS (MiB) |\n", r.pods, r.steady.window.Round(time.Second))
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	var cpu time.Duration
	var rss, pss int64
	var count int
	for _, kind := range []string{"skiff", "containerd", "shim"} {
		fmt.Fprintf(w, "| %s | %d | %.1f | %.1f | %.1f |\n", kind, r.steady.count[kind], percent(r.steady.cpu[kind], r.steady.window), mib(r.steady.rss[kind]), mib(r.steady.pss[kind]))
		cpu += r.steady.cpu[kind]
		rss += r.steady.rss[kind]
		pss += r.steady.pss[kind]
		count += r.steady.count[kind]
	}
	fmt.Fprintf(w, "| total | %d | %.1f | %.1f | %.1f |\n", count, percent(cpu, r.steady.window), mib(rss), mib(pss))
}

func percent(used, window time.Duration) float64 {
	if window <= 0 {
		return 0
	}
	return 100 * float64(used) / float64(window)
}

func mib(bytes int64) float64 { return float64(bytes) / (1 << 20) }

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 0, 64) + " ms"
}
