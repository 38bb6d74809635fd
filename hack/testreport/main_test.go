package main

import (
	"strings"
	"testing"
)

func TestReport(t *testing.T) {
	stream := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestQuick"}`,
		`{"Action":"output","Package":"p","Test":"TestQuick","Output":"quick log line\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestQuick","Elapsed":0.1}`,
		`{"Action":"output","Package":"p","Test":"TestSlow","Output":"slow log line\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestSlow","Elapsed":12.5}`,
		`{"Action":"output","Package":"p","Test":"TestBroken/sub","Output":"sub says why\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestBroken/sub","Elapsed":1}`,
		`{"Action":"fail","Package":"p","Test":"TestBroken","Elapsed":2}`,
		`{"Action":"output","Package":"p","Test":"TestHung","Output":"waiting for pods\n"}`,
		`{"Action":"output","Package":"p","Output":"panic: test timed out\n"}`,
		`{"Action":"fail","Package":"p","Elapsed":30}`,
		`# vet error before the stream`,
		`{"ImportPath":"q [q.test]","Action":"build-output","Output":"q_test.go:3:1: undefined: x\n"}`,
		`{"Action":"pass","Package":"q","Elapsed":1}`,
	}, "\n")
	var out strings.Builder
	r := newReport(&out)
	if err := r.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	r.slowest(2)
	got := out.String()
	for _, want := range []string{
		"--- PASS: TestSlow (12.5s)",
		"--- FAIL: TestBroken (2.0s) [p]",
		"    sub says why",
		"FAIL\tp\t30.0s",
		"    panic: test timed out",
		"--- unfinished: TestHung",
		"    waiting for pods",
		"# vet error before the stream",
		"q_test.go:3:1: undefined: x",
		"ok  \tq\t1.0s",
		"slowest tests:",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"quick log line", "slow log line", "TestQuick"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("report shows %q, a passing test's detail:\n%s", unwanted, got)
		}
	}
	if !r.failed {
		t.Error("a failed package and test did not mark the report failed")
	}
	if i, j := strings.Index(got, "TestSlow  p"), strings.Index(got, "TestBroken  p"); i < 0 || j < 0 || i > j {
		t.Errorf("slowest list is not slowest first:\n%s", got)
	}
}
