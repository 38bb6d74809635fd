// Command testreport turns `go test -json` output into what a CI log needs: one line per
// package and per top-level test with its duration, the whole output of every test that
// failed (subtests included) and of any package that failed outside a test (a panic, a build
// error), and the slowest tests last. A passing test's log lines are not printed: with dozens
// of multi-node e2e tests they would bury the one failure someone has to read.
//
// It reads stdin and exits 1 when a package or test failed, so `set -o pipefail` keeps
// go test's verdict. Only the standard library: it adds nothing to skiff's go.mod.
//
// usage: go test -json ./... | go run ./hack/testreport [-slowest N]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// result is one finished top-level test.
type result struct {
	Package, Test, Action string
	Elapsed               float64
}

// report accumulates the stream. Output is kept per package and per test until the test
// ends, then dropped unless it failed.
type report struct {
	out     io.Writer
	output  map[string]*strings.Builder // key: package + "\x00" + test ("" for the package)
	results []result
	failed  bool
}

// slowLine is the duration from which a passing test gets its own line: the multi-node e2e
// tests all do, the hundreds of quick unit tests do not.
const slowLine = 5.0

func newReport(out io.Writer) *report {
	return &report{out: out, output: map[string]*strings.Builder{}}
}

func key(pkg, test string) string { return pkg + "\x00" + test }

// topLevel is the test's top-level name: subtests' output belongs to their parent's record.
func topLevel(test string) string {
	name, _, _ := strings.Cut(test, "/")
	return name
}

func (r *report) add(e event) {
	k := key(e.Package, topLevel(e.Test))
	switch e.Action {
	case "output":
		b := r.output[k]
		if b == nil {
			b = &strings.Builder{}
			r.output[k] = b
		}
		b.WriteString(e.Output)
	case "build-output":
		// A compile error (go1.24+ reports builds in the stream): always shown.
		fmt.Fprint(r.out, e.Output)
	case "pass", "fail", "skip":
		if e.Test == "" {
			r.finishPackage(e)
			return
		}
		if e.Test != topLevel(e.Test) {
			return // a subtest: its parent reports
		}
		r.results = append(r.results, result{e.Package, e.Test, e.Action, e.Elapsed})
		if e.Action == "fail" {
			r.failed = true
			fmt.Fprintf(r.out, "--- FAIL: %s (%.1fs) [%s]\n", e.Test, e.Elapsed, e.Package)
			if b := r.output[k]; b != nil {
				fmt.Fprint(r.out, indent(b.String()))
			}
		} else if e.Elapsed >= slowLine {
			fmt.Fprintf(r.out, "--- %s: %s (%.1fs)\n", strings.ToUpper(e.Action), e.Test, e.Elapsed)
		}
		delete(r.output, k)
	}
}

// finishPackage prints the package's verdict; a failed package also shows what it printed
// outside any test (build errors, a panic's stack, TestMain's output).
func (r *report) finishPackage(e event) {
	k := key(e.Package, "")
	switch e.Action {
	case "fail":
		r.failed = true
		fmt.Fprintf(r.out, "FAIL\t%s\t%.1fs\n", e.Package, e.Elapsed)
		if b := r.output[k]; b != nil {
			fmt.Fprint(r.out, indent(b.String()))
		}
		// Tests still running when the package failed (a timeout's panic, a crash): their
		// output is the story of what hung.
		for name, b := range r.output {
			if test, ok := strings.CutPrefix(name, e.Package+"\x00"); ok && test != "" {
				fmt.Fprintf(r.out, "--- unfinished: %s\n%s", test, indent(b.String()))
			}
		}
	case "skip":
		fmt.Fprintf(r.out, "?   \t%s\t[no test files]\n", e.Package)
	default:
		fmt.Fprintf(r.out, "ok  \t%s\t%.1fs\n", e.Package, e.Elapsed)
	}
	for name := range r.output {
		if strings.HasPrefix(name, e.Package+"\x00") {
			delete(r.output, name)
		}
	}
}

func indent(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString("    ")
		b.WriteString(line)
	}
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	return b.String()
}

// slowest prints the n longest top-level tests.
func (r *report) slowest(n int) {
	if n <= 0 || len(r.results) == 0 {
		return
	}
	sorted := append([]result(nil), r.results...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Elapsed > sorted[j].Elapsed })
	if len(sorted) > n {
		sorted = sorted[:n]
	}
	fmt.Fprintf(r.out, "slowest tests:\n")
	for _, t := range sorted {
		fmt.Fprintf(r.out, "  %7.1fs  %s  %s\n", t.Elapsed, t.Test, t.Package)
	}
}

// read consumes the stream; lines that are not JSON (go vet or build output that go test
// prints before its JSON starts) are kept and shown, since they explain a build failure.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintln(r.out, string(line))
			continue
		}
		r.add(e)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read go test -json stream: %w", err)
	}
	return nil
}

func main() {
	slowest := flag.Int("slowest", 10, "list this many of the slowest top-level tests at the end")
	flag.Parse()
	r := newReport(os.Stdout)
	if err := r.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	r.slowest(*slowest)
	if r.failed {
		os.Exit(1)
	}
}
