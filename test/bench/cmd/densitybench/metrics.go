package main

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// histograms is one latency histogram summed per verb: upper bound -> cumulative count.
type histograms map[string]map[float64]float64

// The two latency histograms both skiff and kube-apiserver expose: the whole request, and the
// SLI Kubernetes' API call latency SLOs are defined on (without priority-and-fairness queue waits
// and admission webhook calls).
const (
	latencyMetric = "apiserver_request_duration_seconds"
	sliMetric     = "apiserver_request_sli_duration_seconds"
)

// latencies are both histograms at one scrape.
type latencies struct{ total, sli histograms }

// scrapeLatency reads the API server's request-latency histograms and sums them per verb across
// resources.
func scrapeLatency(ctx context.Context, client kubernetes.Interface) (latencies, error) {
	body, err := client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return latencies{}, err
	}
	return latencies{total: parseLatency(string(body), latencyMetric), sli: parseLatency(string(body), sliMetric)}, nil
}

func parseLatency(text, metric string) histograms {
	out := histograms{}
	for line := range strings.SplitSeq(text, "\n") {
		rest, ok := strings.CutPrefix(line, metric+"_bucket{")
		if !ok {
			continue
		}
		labelText, valueText, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		value, err := strconv.ParseFloat(strings.Fields(valueText)[0], 64)
		if err != nil {
			continue
		}
		var verb, le string
		for pair := range strings.SplitSeq(labelText, ",") {
			k, v, _ := strings.Cut(pair, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "verb":
				verb = normalVerb(v)
			case "le":
				le = v
			}
		}
		if verb == "" || verb == "WATCH" || verb == "CONNECT" || verb == "WATCHLIST" {
			continue
		}
		bound := math.Inf(1)
		if le != "+Inf" {
			if bound, err = strconv.ParseFloat(le, 64); err != nil {
				continue
			}
		}
		if out[verb] == nil {
			out[verb] = map[float64]float64{}
		}
		out[verb][bound] += value
	}
	return out
}

// normalVerb names verbs as kube-apiserver's metric does (HTTP-ish, upper case).
func normalVerb(v string) string {
	switch strings.ToLower(v) {
	case "create":
		return "POST"
	case "update":
		return "PUT"
	case "patch":
		return "PATCH"
	case "delete", "deletecollection":
		return "DELETE"
	case "get":
		return "GET"
	case "list":
		return "LIST"
	}
	return strings.ToUpper(v)
}

// verbLatency is one verb's calls during the measurement: the p99 of the SLI (what the SLO is
// on) and of the whole request.
type verbLatency struct {
	verb     string
	count    float64
	p99      time.Duration
	p99Total time.Duration
	slo      time.Duration
}

// latencyBetween is each verb's p99 of the SLI and of the whole request over the calls made
// between two scrapes. A server without the SLI histogram gets the whole request's p99 for both.
func latencyBetween(before, after latencies) []verbLatency {
	total := p99Between(before.total, after.total)
	sli := map[string]verbLatency{}
	for _, v := range p99Between(before.sli, after.sli) {
		sli[v.verb] = v
	}
	for i, v := range total {
		total[i].p99Total = v.p99
		if s, ok := sli[v.verb]; ok {
			total[i].p99 = s.p99
		}
	}
	return total
}

// p99Between is each verb's p99 over the calls made between two scrapes of one histogram,
// interpolated within the bucket as Prometheus' histogram_quantile does.
func p99Between(before, after histograms) []verbLatency {
	var out []verbLatency
	for verb, buckets := range after {
		bounds := make([]float64, 0, len(buckets))
		for b := range buckets {
			bounds = append(bounds, b)
		}
		slices.Sort(bounds)
		delta := func(b float64) float64 { return buckets[b] - before[verb][b] }
		total := delta(math.Inf(1))
		if total <= 0 {
			continue
		}
		rank := 0.99 * total
		p99, prevBound, prevCount := 0.0, 0.0, 0.0
		for _, b := range bounds {
			c := delta(b)
			if c >= rank {
				if math.IsInf(b, 1) {
					p99 = prevBound
				} else {
					p99 = prevBound + (b-prevBound)*(rank-prevCount)/math.Max(c-prevCount, 1e-9)
				}
				break
			}
			prevBound, prevCount = b, c
		}
		out = append(out, verbLatency{verb: verb, count: total, p99: time.Duration(p99 * float64(time.Second)), slo: sloFor(verb)})
	}
	slices.SortFunc(out, func(a, b verbLatency) int { return strings.Compare(a.verb, b.verb) })
	return out
}

// sloFor is Kubernetes' API call latency SLO for the verb: 1 s for single-object calls, 30 s for
// cluster-wide LISTs (the loosest of the LIST scopes).
func sloFor(verb string) time.Duration {
	if verb == "LIST" {
		return 30 * time.Second
	}
	return time.Second
}
