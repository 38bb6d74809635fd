package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// cause is a failure's root cause written down once (hack/conformance/causes.tsv): every
// failed spec whose name matches pattern is listed under text.
type cause struct {
	pattern *regexp.Regexp
	text    string
}

// parseCauses reads lines of REGEX<TAB>cause; blank lines and lines starting with # are skipped.
func parseCauses(r io.Reader, name string) ([]cause, error) {
	var out []cause
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		expr, text, ok := strings.Cut(line, "\t")
		text = strings.TrimSpace(text)
		if !ok || text == "" {
			return nil, fmt.Errorf("%s:%d: want REGEX<TAB>cause", name, n)
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		out = append(out, cause{re, text})
	}
	return out, sc.Err()
}

func readCauses(path string) ([]cause, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("causes: %w", err)
	}
	defer f.Close()
	return parseCauses(f, path)
}

// firstLine is the first non-empty line of s, cut to limit runes.
func firstLine(s string, limit int) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if r := []rune(l); len(r) > limit {
				return string(r[:limit]) + "..."
			}
			return l
		}
	}
	return ""
}

// reason is what e2e.test said of a failed or skipped case: the message attribute, or the
// element's text where the attribute is empty.
func reason(m *message) string {
	if m == nil {
		return ""
	}
	if r := firstLine(m.Message, 240); r != "" {
		return r
	}
	return firstLine(m.Text, 240)
}

// failureGroup is the failed specs of one written-down cause, or of none (known false).
type failureGroup struct {
	cause string
	known bool
	specs []string // "name" or, for unexplained failures, "name: e2e.test's message"
}

// groupFailures files each failed case under the first cause that matches its name; the rest
// are listed with e2e.test's own message. Known causes come first, in the causes file's order.
func groupFailures(cases []testCase, known []cause) []failureGroup {
	groups := make([]failureGroup, len(known)+1)
	for i, c := range known {
		groups[i] = failureGroup{cause: c.text, known: true}
	}
	unexplained := &groups[len(known)]
	unexplained.cause = "no cause written down yet (e2e.test's message)"
	for _, c := range cases {
		if outcome(c) != "failed" {
			continue
		}
		name := specName(c.Name)
		filed := false
		for i, k := range known {
			if k.pattern.MatchString(name) {
				groups[i].specs = append(groups[i].specs, name)
				filed = true
				break
			}
		}
		if !filed {
			msg := reason(c.Failure)
			if msg == "" {
				msg = reason(c.Error)
			}
			if msg == "" {
				msg = "status " + c.Status
			}
			unexplained.specs = append(unexplained.specs, name+": "+msg)
		}
	}
	out := groups[:0]
	for _, g := range groups {
		if len(g.specs) > 0 {
			sort.Strings(g.specs)
			out = append(out, g)
		}
	}
	return out
}

// skipReason is a skipped case's reason with ginkgo's "skipped - " prefix dropped.
func skipReason(c testCase) string {
	r := strings.TrimPrefix(reason(c.Skipped), "skipped - ")
	if r == "" {
		return "(no reason given)"
	}
	return r
}

// writePage writes the results page: the totals, a table per SIG, the failures grouped by
// cause, and the skip reasons with how many specs each skipped.
func writePage(w io.Writer, title string, cases []testCase, known []cause) {
	bySig, _ := summarize(cases)
	var total tally
	for _, t := range bySig {
		total.passed += t.passed
		total.failed += t.failed
		total.skipped += t.skipped
	}
	fmt.Fprintf(w, "# %s\n\n", title)
	ran := total.passed + total.failed
	rate := 0.0
	if ran > 0 {
		rate = 100 * float64(total.passed) / float64(ran)
	}
	fmt.Fprintf(w, "%d specs ran: %d passed, %d failed (%.1f%% passed); %d skipped by e2e.test.\n\n", ran, total.passed, total.failed, rate, total.skipped)
	fmt.Fprintf(w, "## Per SIG\n\n| SIG | passed | failed | skipped |\n|---|---|---|---|\n")
	for _, s := range sortedSigs(bySig) {
		t := bySig[s]
		fmt.Fprintf(w, "| %s | %d | %d | %d |\n", s, t.passed, t.failed, t.skipped)
	}
	if groups := groupFailures(cases, known); len(groups) > 0 {
		fmt.Fprintf(w, "\n## Failures by cause\n")
		for _, g := range groups {
			fmt.Fprintf(w, "\n### %s (%d)\n\n", g.cause, len(g.specs))
			for _, s := range g.specs {
				fmt.Fprintf(w, "- %s\n", s)
			}
		}
	}
	skips := map[string]int{}
	for _, c := range cases {
		if outcome(c) == "skipped" {
			skips[skipReason(c)]++
		}
	}
	if len(skips) > 0 {
		reasons := make([]string, 0, len(skips))
		for r := range skips {
			reasons = append(reasons, r)
		}
		sort.Slice(reasons, func(i, j int) bool {
			if skips[reasons[i]] != skips[reasons[j]] {
				return skips[reasons[i]] > skips[reasons[j]]
			}
			return reasons[i] < reasons[j]
		})
		fmt.Fprintf(w, "\n## Skipped by e2e.test\n\n| reason | specs |\n|---|---|\n")
		for _, r := range reasons {
			fmt.Fprintf(w, "| %s | %d |\n", strings.ReplaceAll(r, "|", `\|`), skips[r])
		}
	}
}
