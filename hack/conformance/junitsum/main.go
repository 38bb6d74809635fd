// Command junitsum prints passed/failed counts per SIG from the junit reports
// ginkgo writes for the conformance suite (hack/conformance.sh), then the
// names of the specs that did not pass. Skipped specs are not counted. Only
// the standard library: it adds nothing to skiff's go.mod.
//
// usage: go run ./hack/conformance/junitsum REPORT.xml...
package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

type testCase struct {
	Name    string    `xml:"name,attr"`
	Status  string    `xml:"status,attr"`
	Time    float64   `xml:"time,attr"`
	Skipped *struct{} `xml:"skipped"`
	Failure *struct{} `xml:"failure"`
	Error   *struct{} `xml:"error"`
}

type suites struct {
	Suites []struct {
		Cases []testCase `xml:"testcase"`
	} `xml:"testsuite"`
}

// outcome is a case's result: passed, failed, or skipped (not counted).
// ginkgo writes status="passed|failed|skipped|pending|interrupted|timedout|panicked|aborted".
func outcome(c testCase) string {
	switch c.Status {
	case "passed":
		return "passed"
	case "skipped", "pending":
		return "skipped"
	case "":
		switch {
		case c.Skipped != nil:
			return "skipped"
		case c.Failure != nil || c.Error != nil:
			return "failed"
		}
		return "passed"
	}
	return "failed"
}

var sigRE = regexp.MustCompile(`\[(sig-[a-z0-9-]+)\]`)

// sig is the first [sig-...] tag of a spec name, "other" without one.
func sig(name string) string {
	if m := sigRE.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return "other"
}

// specName drops what ginkgo adds to a spec's text in the junit report: the "[It] " node type
// before it and the label list ("[sig-node, NodeConformance, Conformance]") after it.
func specName(name string) string {
	name = strings.TrimPrefix(name, "[It] ")
	if i := strings.LastIndex(name, " ["); i >= 0 && strings.HasSuffix(name, "]") && strings.Contains(name[i:], ", ") {
		name = name[:i]
	}
	return name
}

type tally struct{ passed, failed int }

// summarize counts outcomes per SIG and lists the failed specs, sorted. Suite
// set-up nodes ("[SynchronizedBeforeSuite]" etc.) count only when they failed.
func summarize(cases []testCase) (map[string]*tally, []string) {
	bySig := map[string]*tally{}
	var failed []string
	for _, c := range cases {
		o := outcome(c)
		if o == "skipped" {
			continue
		}
		if strings.HasPrefix(c.Name, "[") && !sigRE.MatchString(c.Name) && o == "passed" {
			continue
		}
		s := sig(c.Name)
		if bySig[s] == nil {
			bySig[s] = &tally{}
		}
		if o == "passed" {
			bySig[s].passed++
		} else {
			bySig[s].failed++
			failed = append(failed, specName(c.Name))
		}
	}
	sort.Strings(failed)
	return bySig, failed
}

func parse(r io.Reader) ([]testCase, error) {
	var s suites
	if err := xml.NewDecoder(r).Decode(&s); err != nil {
		return nil, err
	}
	var out []testCase
	for _, suite := range s.Suites {
		out = append(out, suite.Cases...)
	}
	return out, nil
}

func run(files []string, w io.Writer) error {
	var cases []testCase
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return fmt.Errorf("junit report: %w", err)
		}
		cs, err := parse(fh)
		fh.Close()
		if err != nil {
			return fmt.Errorf("junit report %s: %w", f, err)
		}
		cases = append(cases, cs...)
	}
	bySig, failed := summarize(cases)
	sigs := make([]string, 0, len(bySig))
	for s := range bySig {
		sigs = append(sigs, s)
	}
	sort.Strings(sigs)
	var total tally
	fmt.Fprintf(w, "| SIG | passed | failed |\n|---|---|---|\n")
	for _, s := range sigs {
		t := bySig[s]
		fmt.Fprintf(w, "| %s | %d | %d |\n", s, t.passed, t.failed)
		total.passed += t.passed
		total.failed += t.failed
	}
	fmt.Fprintf(w, "| total | %d | %d |\n", total.passed, total.failed)
	if len(failed) > 0 {
		fmt.Fprintf(w, "\nnot passed:\n")
		for _, f := range failed {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	fmt.Fprintf(w, "\n%d passed, %d failed\n", total.passed, total.failed)
	return nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: junitsum REPORT.xml...")
		os.Exit(2)
	}
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
