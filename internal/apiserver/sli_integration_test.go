package apiserver

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// holdAdmission holds creates of configmaps named hold-* until release closes.
type holdAdmission struct{ release chan struct{} }

func (*holdAdmission) Name() string { return "Hold" }

func (h *holdAdmission) Admit(_ context.Context, a *AdmissionAttributes, _ Lookup) error {
	if a.Resource.GroupResource().Resource == "configmaps" && strings.HasPrefix(a.Name, "hold-") {
		<-h.release
	}
	return nil
}

func (*holdAdmission) Validate(context.Context, *AdmissionAttributes, Lookup) error { return nil }

// gaugeSum sums a metric's gauge values whose label name has value.
func gaugeSum(t *testing.T, reg *prometheus.Registry, metric, name, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == name && lp.GetValue() == value {
					sum += m.GetGauge().GetValue()
				}
			}
		}
	}
	return sum
}

// histogramSum is the sum of the histogram metric's series for verb and resource.
func histogramSum(t *testing.T, reg *prometheus.Registry, metric, verb, resource string) (sum float64, count uint64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != metric {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if (lp.GetName() == "verb" && lp.GetValue() != verb) || (lp.GetName() == "resource" && lp.GetValue() != resource) {
					continue series
				}
			}
			sum += m.GetHistogram().GetSampleSum()
			count += m.GetHistogram().GetSampleCount()
		}
	}
	return sum, count
}

// apiserver_request_sli_duration_seconds is the request's latency without the time it waited in a
// priority-and-fairness queue: a create that queued behind held seats shows the wait in
// apiserver_request_duration_seconds and not in the SLI.
func TestSLILatencyLeavesOutQueueWait(t *testing.T) {
	hold := &holdAdmission{release: make(chan struct{})}
	var reg *prometheus.Registry
	c, fc := apfCluster(t, 30, time.Minute, func(cfg *Config) {
		cfg.Admission = append(cfg.Admission, hold)
		reg = cfg.Registry.(*prometheus.Registry)
		// Latencies are read from the clock: the test cluster's fake one would make them all 0.
		cfg.Clock = clock.RealClock{}
	})
	seats := fc.Limit("global-default")
	if seats < 1 {
		t.Fatalf("global-default has %d seats", seats)
	}
	bobCfg := rest.CopyConfig(c.admin)
	bobCfg.Impersonate = rest.ImpersonationConfig{UserName: "bob"}
	bob := kubernetes.NewForConfigOrDie(bobCfg)
	create := func(name string, done chan<- error) {
		_, err := bob.CoreV1().ConfigMaps("default").Create(context.Background(), configMap("default", name, nil), metav1.CreateOptions{})
		done <- err
	}
	done := make(chan error, seats+1)
	for i := range seats {
		go create("hold-"+string(rune('a'+i%26))+strings.Repeat("x", i/26), done)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("every seat held", func() bool {
		return gaugeSum(t, reg, "apiserver_flowcontrol_current_executing_seats", "priority_level", "global-default") >= float64(seats)
	})
	go create("queued", done)
	waitFor("the request to queue", func() bool {
		return gaugeSum(t, reg, "apiserver_flowcontrol_current_inqueue_requests", "priority_level", "global-default") >= 1
	})
	const wait = 300 * time.Millisecond
	time.Sleep(wait)
	close(hold.release)
	for range seats + 1 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	latency, n := histogramSum(t, reg, "apiserver_request_duration_seconds", "POST", "configmaps")
	sli, m := histogramSum(t, reg, "apiserver_request_sli_duration_seconds", "POST", "configmaps")
	if n != uint64(seats+1) || m != n {
		t.Fatalf("observations: latency %d, SLI %d; want %d each", n, m, seats+1)
	}
	// The held requests spent their time in admission (counted by both); the queued one its wait
	// (counted by the latency only).
	if diff := latency - sli; diff < wait.Seconds()*0.9 {
		t.Fatalf("latency sum %.3fs, SLI sum %.3fs: the SLI left out %.3fs, want the queue wait of at least %s", latency, sli, diff, wait)
	}
}
