package main

import (
	"fmt"
	"io"
	"time"

	"github.com/skiff-sh/skiff/test/bench"
)

// report is what one run measured.
type report struct {
	machine bench.Machine
	label   string
	opts    options

	create, rollout                   phase
	createServerCPU, createBenchCPU   time.Duration
	rolloutServerCPU, rolloutBenchCPU time.Duration
}

func (r *report) print(out io.Writer) {
	fmt.Fprintf(out, "machine: %s\n", r.machine)
	if r.label != "" {
		fmt.Fprintf(out, "label: %s\n", r.label)
	}
	fmt.Fprintf(out, "workload: %d simulated nodes, %d Deployments x %d replicas = %d pods (RollingUpdate 25%%/25%%)\n",
		r.opts.nodes, r.opts.deployments, r.opts.replicas, r.opts.deployments*r.opts.replicas)
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| phase | writes issued | half of Deployments done | all done | pods/s | skiff CPU | bench CPU (sim kubelets) |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|")
	row := func(name string, p phase, server, self time.Duration) {
		fmt.Fprintf(out, "| %s | %s | %s | %s | %.0f | %s | %s |\n", name, round(p.writes), round(p.p50), round(p.total),
			float64(p.pods)/p.total.Seconds(), round(server), round(self))
	}
	row("create, until all replicas available", r.create, r.createServerCPU, r.createBenchCPU)
	if !r.opts.skipRollout {
		row("rolling update (image change), until complete", r.rollout, r.rolloutServerCPU, r.rolloutBenchCPU)
	}
}

func round(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Millisecond).String()
	}
}
