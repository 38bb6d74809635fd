// Command junitsum prints passed/failed counts per SIG from the junit reports
// ginkgo writes for a suite of hack/conformance.sh, then the names of the specs
// that did not pass. Skipped specs are counted apart. With -page it also writes
// a results page (markdown): per SIG passed / failed / skipped, each failure
// with its written-down cause (from -causes) or, where none is written, the
// first line of e2e.test's own failure message, and each skip reason e2e.test
// printed with how many specs it skipped. Only the standard library: it adds
// nothing to skiff's go.mod.
//
// usage: go run ./hack/conformance/junitsum [-page FILE] [-causes FILE] [-title T] REPORT.xml...
package main

import (
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// message is a <failure>, <error> or <skipped> element: ginkgo puts the short reason in its
// message attribute and the whole report (stack, timeline) in its text.
type message struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

type testCase struct {
	Name    string   `xml:"name,attr"`
	Status  string   `xml:"status,attr"`
	Time    float64  `xml:"time,attr"`
	Skipped *message `xml:"skipped"`
	Failure *message `xml:"failure"`
	Error   *message `xml:"error"`
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
// before it and the label list ("[sig-node, NodeConformance, Conformance]", or "[sig-node]"
// alone) after it. Every e2e spec carries its SIG's label, so a last bracket naming several
// labels or a sig- one is the list, not the spec's own text.
func specName(name string) string {
	name = strings.TrimPrefix(name, "[It] ")
	i := strings.LastIndex(name, " [")
	if i < 0 || !strings.HasSuffix(name, "]") {
		return name
	}
	labels := strings.Split(name[i+2:len(name)-1], ", ")
	if len(labels) > 1 || strings.HasPrefix(labels[0], "sig-") {
		name = name[:i]
	}
	return name
}

type tally struct{ passed, failed, skipped int }

// summarize counts outcomes per SIG and lists the failed specs, sorted. Suite
// set-up nodes ("[SynchronizedBeforeSuite]" etc.) count only when they failed.
func summarize(cases []testCase) (map[string]*tally, []string) {
	bySig := map[string]*tally{}
	var failed []string
	for _, c := range cases {
		o := outcome(c)
		if strings.HasPrefix(c.Name, "[") && !sigRE.MatchString(c.Name) && o != "failed" {
			continue
		}
		s := sig(c.Name)
		if bySig[s] == nil {
			bySig[s] = &tally{}
		}
		switch o {
		case "passed":
			bySig[s].passed++
		case "skipped":
			bySig[s].skipped++
		default:
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

// readReports parses every report into one list of cases.
func readReports(files []string) ([]testCase, error) {
	var cases []testCase
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, fmt.Errorf("junit report: %w", err)
		}
		cs, err := parse(fh)
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("junit report %s: %w", f, err)
		}
		cases = append(cases, cs...)
	}
	return cases, nil
}

// sortedSigs are bySig's keys in order.
func sortedSigs(bySig map[string]*tally) []string {
	sigs := make([]string, 0, len(bySig))
	for s := range bySig {
		sigs = append(sigs, s)
	}
	sort.Strings(sigs)
	return sigs
}

// summary writes the per-SIG table, the specs that did not pass and the closing count.
func summary(cases []testCase, w io.Writer) {
	bySig, failed := summarize(cases)
	var total tally
	fmt.Fprintf(w, "| SIG | passed | failed | skipped |\n|---|---|---|---|\n")
	for _, s := range sortedSigs(bySig) {
		t := bySig[s]
		fmt.Fprintf(w, "| %s | %d | %d | %d |\n", s, t.passed, t.failed, t.skipped)
		total.passed += t.passed
		total.failed += t.failed
		total.skipped += t.skipped
	}
	fmt.Fprintf(w, "| total | %d | %d | %d |\n", total.passed, total.failed, total.skipped)
	if len(failed) > 0 {
		fmt.Fprintf(w, "\nnot passed:\n")
		for _, f := range failed {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	fmt.Fprintf(w, "\n%d passed, %d failed, %d skipped\n", total.passed, total.failed, total.skipped)
}

func run(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("junitsum", flag.ContinueOnError)
	page := fs.String("page", "", "also write a results page (markdown) to this file")
	causesFile := fs.String("causes", "", "known failure causes: lines of REGEX<TAB>cause, matched against spec names")
	title := fs.String("title", "e2e results", "the results page's heading")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("no junit report named (usage: junitsum [-page FILE] [-causes FILE] [-title T] REPORT.xml...)")
	}
	cases, err := readReports(fs.Args())
	if err != nil {
		return err
	}
	summary(cases, w)
	if *page == "" {
		return nil
	}
	var known []cause
	if *causesFile != "" {
		if known, err = readCauses(*causesFile); err != nil {
			return err
		}
	}
	f, err := os.Create(*page)
	if err != nil {
		return fmt.Errorf("results page: %w", err)
	}
	writePage(f, *title, cases, known)
	return f.Close()
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
