package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Report is one benchmark run's figures.
type Report struct {
	Machine Machine
	Label   string
	Creates []CreateResult
	Fanout  []FanoutResult
	Started time.Time
}

// Write prints the report as aligned tables (also valid Markdown tables).
func (r Report) Write(out io.Writer) {
	fmt.Fprintf(out, "machine: %s\n", r.Machine)
	if r.Label != "" {
		fmt.Fprintf(out, "server: %s\n", r.Label)
	}
	fmt.Fprintf(out, "date: %s\n\n", r.Started.UTC().Format(time.RFC3339))
	if len(r.Creates) > 0 {
		fmt.Fprintln(out, "creates of 1 KiB ConfigMaps over HTTPS (client-go, no client-side throttling):")
		tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', tabwriter.Debug)
		fmt.Fprintln(tw, "| encoding\t concurrency\t creates\t creates/s\t p50 ms\t p99 ms\t max ms\t errors\t server CPU µs/create\t")
		fmt.Fprintln(tw, "|---\t---\t---\t---\t---\t---\t---\t---\t---\t")
		for _, c := range r.Creates {
			fmt.Fprintf(tw, "| %s\t %d\t %d\t %.0f\t %s\t %s\t %s\t %d\t %s\t\n", c.Encoding, c.Concurrency, c.Creates, c.PerSecond,
				ms(c.Latency.P50), ms(c.Latency.P99), ms(c.Latency.Max), c.Errors, perItem(c.ServerCPU, c.Creates))
		}
		tw.Flush()
		for _, c := range r.Creates {
			if c.FirstError != nil {
				fmt.Fprintf(out, "  first error (%s, concurrency %d): %v\n", c.Encoding, c.Concurrency, c.FirstError)
			}
		}
		fmt.Fprintln(out)
	}
	if len(r.Fanout) > 0 {
		fmt.Fprintln(out, "watch fan-out: one writer creating 1 KiB ConfigMaps, N client-go watchers:")
		tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', tabwriter.Debug)
		fmt.Fprintln(tw, "| encoding\t watchers\t writer\t writes\t writes/s\t delivered/expected\t events/s delivered\t p50 delay ms\t p99 delay ms\t max ms\t rewatches\t server CPU µs/event\t")
		fmt.Fprintln(tw, "|---\t---\t---\t---\t---\t---\t---\t---\t---\t---\t---\t---\t")
		for _, f := range r.Fanout {
			writer := "closed loop"
			if f.Rate > 0 {
				writer = fmt.Sprintf("%.0f/s", f.Rate)
			}
			fmt.Fprintf(tw, "| %s\t %d\t %s\t %d\t %.0f\t %d/%d\t %.0f\t %s\t %s\t %s\t %d\t %s\t\n", f.Encoding, f.Watchers, writer, f.Writes, f.WriteRate,
				f.Delivered, f.Expected, f.PerSecond, ms(f.Delay.P50), ms(f.Delay.P99), ms(f.Delay.Max), f.Rewatches, perItem(f.ServerCPU, f.Delivered))
		}
		tw.Flush()
		for _, f := range r.Fanout {
			if f.FirstErr != nil || f.Failures > 0 {
				fmt.Fprintf(out, "  %s: %d watches could not be resumed; first error: %v\n", f.Encoding, f.Failures, f.FirstErr)
			}
		}
	}
}

// perItem is CPU time per item in microseconds, or "-" when not measured.
func perItem(cpu time.Duration, n int) string {
	if cpu <= 0 || n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", float64(cpu.Microseconds())/float64(n))
}
