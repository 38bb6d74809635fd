package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// The phases of one start, in the order a node passes them; each is measured from the moment the
// process was started.
const (
	phaseKubeconfig = "admin kubeconfig written"
	phaseHealthy    = "API healthy (/readyz ok)"
	phaseRegistered = "Node registered"
	phaseReady      = "Node Ready"
)

var phases = []string{phaseKubeconfig, phaseHealthy, phaseRegistered, phaseReady}

// run is one start's phase times (from exec to the phase), keyed by phase name; a phase the
// start never reached is absent.
type run map[string]time.Duration

// phaseSummary is one phase over the runs of a scenario.
type phaseSummary struct {
	phase          string
	runs           int
	median, worst  time.Duration
	best           time.Duration
	missingFromSum int
}

// summarize is the median (the lower middle of an even count), best and worst of each phase over
// runs, in phase order; a phase no run reached is left out, and one some runs missed says how
// many.
func summarize(runs []run) []phaseSummary {
	var out []phaseSummary
	for _, p := range phases {
		var ds []time.Duration
		for _, r := range runs {
			if d, ok := r[p]; ok {
				ds = append(ds, d)
			}
		}
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		out = append(out, phaseSummary{phase: p, runs: len(ds), median: ds[(len(ds)-1)/2], best: ds[0],
			worst: ds[len(ds)-1], missingFromSum: len(runs) - len(ds)})
	}
	return out
}

// scenario is one kind of start and its runs.
type scenario struct {
	name string
	runs []run
}

// writeReport prints each scenario's phases as a Markdown table, and every run's figures under it.
func writeReport(out io.Writer, header []string, scenarios []scenario) {
	for _, h := range header {
		fmt.Fprintln(out, h)
	}
	for _, s := range scenarios {
		fmt.Fprintf(out, "\n%s (%d runs; time from exec of skiff server):\n\n", s.name, len(s.runs))
		tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', tabwriter.Debug)
		fmt.Fprintln(tw, "| phase\t median ms\t best ms\t worst ms\t runs\t")
		fmt.Fprintln(tw, "|---\t---\t---\t---\t---\t")
		for _, p := range summarize(s.runs) {
			runs := fmt.Sprint(p.runs)
			if p.missingFromSum > 0 {
				runs = fmt.Sprintf("%d (%d never)", p.runs, p.missingFromSum)
			}
			fmt.Fprintf(tw, "| %s\t %d\t %d\t %d\t %s\t\n", p.phase, p.median.Milliseconds(), p.best.Milliseconds(), p.worst.Milliseconds(), runs)
		}
		tw.Flush()
		for i, r := range s.runs {
			fmt.Fprintf(out, "  run %d:", i+1)
			for _, p := range phases {
				if d, ok := r[p]; ok {
					fmt.Fprintf(out, " %s %dms;", p, d.Milliseconds())
				}
			}
			fmt.Fprintln(out)
		}
	}
}
