package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	runs := []run{
		{phaseHealthy: ms(300), phaseReady: ms(900)},
		{phaseHealthy: ms(100), phaseReady: ms(700)},
		{phaseHealthy: ms(200)}, // never Ready
		{phaseHealthy: ms(400), phaseReady: ms(800)},
	}
	got := summarize(runs)
	want := []phaseSummary{
		{phase: phaseHealthy, runs: 4, median: ms(200), best: ms(100), worst: ms(400)},
		{phase: phaseReady, runs: 3, median: ms(800), best: ms(700), worst: ms(900), missingFromSum: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("summarize = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("phase %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if s := summarize(nil); len(s) != 0 {
		t.Errorf("summarize(nil) = %+v, want no phases", s)
	}
}

func TestWriteReport(t *testing.T) {
	var out bytes.Buffer
	writeReport(&out, []string{"machine: test"}, []scenario{{name: "fresh", runs: []run{{phaseReady: 1500 * time.Millisecond}}}})
	for _, want := range []string{"machine: test", "fresh (1 runs", "| Node Ready", " 1500", "run 1: Node Ready 1500ms;"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
