package main

import (
	"strconv"
	"testing"
	"time"
)

// The SLO figure is the SLI histogram's p99; the whole request's p99 stands beside it; other verbs
// and watches stay out; a server without the SLI reports the whole request's for both.
func TestLatencyBetweenReadsTheSLI(t *testing.T) {
	scrape := func(slowPOSTs float64) string {
		return `# HELP x
apiserver_request_duration_seconds_bucket{verb="POST",resource="pods",le="0.1"} 90
apiserver_request_duration_seconds_bucket{verb="POST",resource="pods",le="1"} 90
apiserver_request_duration_seconds_bucket{verb="POST",resource="pods",le="5"} ` + ftoa(90+slowPOSTs) + `
apiserver_request_duration_seconds_bucket{verb="POST",resource="pods",le="+Inf"} ` + ftoa(90+slowPOSTs) + `
apiserver_request_duration_seconds_bucket{verb="WATCH",resource="pods",le="+Inf"} 7
apiserver_request_sli_duration_seconds_bucket{verb="POST",resource="pods",le="0.1"} ` + ftoa(90+slowPOSTs) + `
apiserver_request_sli_duration_seconds_bucket{verb="POST",resource="pods",le="1"} ` + ftoa(90+slowPOSTs) + `
apiserver_request_sli_duration_seconds_bucket{verb="POST",resource="pods",le="5"} ` + ftoa(90+slowPOSTs) + `
apiserver_request_sli_duration_seconds_bucket{verb="POST",resource="pods",le="+Inf"} ` + ftoa(90+slowPOSTs) + `
`
	}
	parse := func(text string) latencies {
		return latencies{total: parseLatency(text, latencyMetric), sli: parseLatency(text, sliMetric)}
	}
	got := latencyBetween(parse(scrape(0)), parse(scrape(10)))
	if len(got) != 1 || got[0].verb != "POST" || got[0].count != 10 {
		t.Fatalf("verbs %+v, want POST with the 10 calls between the scrapes", got)
	}
	if got[0].p99 > 100*time.Millisecond || got[0].p99Total < time.Second {
		t.Errorf("POST p99: SLI %s (want within 0.1 s), whole request %s (want the slow bucket)", got[0].p99, got[0].p99Total)
	}
	noSLI := latencies{total: parseLatency(scrape(10), latencyMetric), sli: histograms{}}
	before := latencies{total: parseLatency(scrape(0), latencyMetric), sli: histograms{}}
	if v := latencyBetween(before, noSLI); len(v) != 1 || v[0].p99 != v[0].p99Total {
		t.Errorf("without an SLI histogram: %+v, want the whole request's p99 for both", v)
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
