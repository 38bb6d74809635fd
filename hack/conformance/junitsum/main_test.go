package main

import (
	"reflect"
	"strings"
	"testing"
)

const report = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="5">
  <testsuite name="Kubernetes e2e suite" tests="5">
    <testcase name="[SynchronizedBeforeSuite]" status="passed" time="1"></testcase>
    <testcase name="[sig-node] Pods should run [Conformance]" status="passed" time="3"></testcase>
    <testcase name="[It] [sig-node] Pods should fail [Conformance] [sig-node, Conformance]" status="failed" time="3"><failure message="x">boom</failure></testcase>
    <testcase name="[sig-apps] Job should do [Conformance]" status="timedout" time="900"><failure message="t"></failure></testcase>
    <testcase name="[sig-apps] Deployment should skip [Conformance]" status="skipped" time="0"><skipped message="s"></skipped></testcase>
    <testcase name="[sig-storage] ConfigMap works [NodeConformance] [Conformance]" status="passed" time="2"></testcase>
  </testsuite>
</testsuites>`

func TestSummarize(t *testing.T) {
	cases, err := parse(strings.NewReader(report))
	if err != nil {
		t.Fatal(err)
	}
	bySig, failed := summarize(cases)
	got := map[string]tally{}
	for s, c := range bySig {
		got[s] = *c
	}
	want := map[string]tally{"sig-node": {1, 1, 0}, "sig-apps": {0, 1, 1}, "sig-storage": {1, 0, 0}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("per SIG = %v, want %v", got, want)
	}
	wantFailed := []string{"[sig-apps] Job should do [Conformance]", "[sig-node] Pods should fail [Conformance]"}
	if !reflect.DeepEqual(failed, wantFailed) {
		t.Errorf("failed = %v, want %v", failed, wantFailed)
	}
}

func TestOutcomeWithoutStatus(t *testing.T) {
	for _, tc := range []struct {
		c    testCase
		want string
	}{
		{testCase{}, "passed"},
		{testCase{Skipped: &message{}}, "skipped"},
		{testCase{Failure: &message{}}, "failed"},
		{testCase{Status: "interrupted"}, "failed"},
		{testCase{Status: "pending"}, "skipped"},
	} {
		if got := outcome(tc.c); got != tc.want {
			t.Errorf("outcome(%+v) = %s, want %s", tc.c, got, tc.want)
		}
	}
}

func TestSig(t *testing.T) {
	if s := sig("[sig-api-machinery] Watchers [Conformance]"); s != "sig-api-machinery" {
		t.Errorf("sig = %s", s)
	}
	if s := sig("[SynchronizedAfterSuite]"); s != "other" {
		t.Errorf("sig = %s", s)
	}
}

func TestSpecName(t *testing.T) {
	for in, want := range map[string]string{
		"[It] [sig-node] ConfigMap should be consumable via the environment [NodeConformance] [Conformance] [sig-node, NodeConformance, Conformance]": "[sig-node] ConfigMap should be consumable via the environment [NodeConformance] [Conformance]",
		"[sig-apps] Job should do [Conformance]":                                        "[sig-apps] Job should do [Conformance]",
		"[SynchronizedBeforeSuite]":                                                     "[SynchronizedBeforeSuite]",
		"[It] [sig-node] Pods should run [sig-node]":                                    "[sig-node] Pods should run",
		"[It] [sig-storage] In-tree Volumes [Driver: gcepd] should mount [sig-storage]": "[sig-storage] In-tree Volumes [Driver: gcepd] should mount",
	} {
		if got := specName(in); got != want {
			t.Errorf("specName(%q) = %q, want %q", in, got, want)
		}
	}
}
