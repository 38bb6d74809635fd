package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const pageReport = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="Kubernetes e2e suite">
    <testcase name="[SynchronizedBeforeSuite]" status="passed"></testcase>
    <testcase name="[It] [sig-node] Pods should run [sig-node]" status="passed"></testcase>
    <testcase name="[It] [sig-node] Pod InPlace Resize Container should resize cpu [sig-node]" status="panicked"><failure message="[PANICKED] Test Panicked&#xA;runtime error: nil pointer" type="panicked">stack</failure></testcase>
    <testcase name="[It] [sig-node] Pod InPlace Resize Container should resize memory [sig-node]" status="failed"><failure message="[FAILED] resize subresource not found" type="failed"></failure></testcase>
    <testcase name="[It] [sig-network] Services should serve [sig-network]" status="failed"><failure message="" type="failed">&#xA;  [FAILED] service verification failed for: 10.0.0.1&#xA;more</failure></testcase>
    <testcase name="[It] [sig-storage] In-tree Volumes [Driver: gcepd] should mount [sig-storage]" status="skipped"><skipped message="skipped - Only supported for providers [gce gke] (not skeleton)"></skipped></testcase>
    <testcase name="[It] [sig-storage] In-tree Volumes [Driver: awsebs] should mount [sig-storage]" status="skipped"><skipped message="skipped - Only supported for providers [aws] (not skeleton)"></skipped></testcase>
    <testcase name="[It] [sig-storage] In-tree Volumes [Driver: gcepd] should expand [sig-storage]" status="skipped"><skipped message="skipped - Only supported for providers [gce gke] (not skeleton)"></skipped></testcase>
  </testsuite>
</testsuites>`

func TestResultsPage(t *testing.T) {
	cases, err := parse(strings.NewReader(pageReport))
	if err != nil {
		t.Fatal(err)
	}
	known, err := parseCauses(strings.NewReader("# comment\n\n\\[sig-node\\] Pod InPlace Resize\tin-place resize: the resize subresource is missing\n"), "causes")
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	writePage(&page, "default suite", cases, known)
	got := page.String()
	for _, want := range []string{
		"# default suite\n",
		"4 specs ran: 1 passed, 3 failed (25.0% passed); 3 skipped by e2e.test.",
		"| sig-node | 1 | 2 | 0 |",
		"| sig-network | 0 | 1 | 0 |",
		"| sig-storage | 0 | 0 | 3 |",
		// The two resize failures under their written-down cause, by name alone.
		"### in-place resize: the resize subresource is missing (2)\n\n- [sig-node] Pod InPlace Resize Container should resize cpu\n- [sig-node] Pod InPlace Resize Container should resize memory\n",
		// The unexplained failure with e2e.test's message, from the text when the attribute is empty.
		"### no cause written down yet (e2e.test's message) (1)\n\n- [sig-network] Services should serve: [FAILED] service verification failed for: 10.0.0.1\n",
		// Skip reasons, most frequent first, without ginkgo's prefix.
		"| Only supported for providers [gce gke] (not skeleton) | 2 |\n| Only supported for providers [aws] (not skeleton) | 1 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("page lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "SynchronizedBeforeSuite") {
		t.Errorf("a passed set-up node is on the page:\n%s", got)
	}
}

func TestParseCausesErrors(t *testing.T) {
	for _, in := range []string{"no tab here", "[unclosed\tcause", "regex\t  "} {
		if _, err := parseCauses(strings.NewReader(in), "f"); err == nil {
			t.Errorf("parseCauses(%q) accepted it", in)
		}
	}
}

// TestRunWritesPage runs the command's flags end to end: the summary on stdout and the page on
// disk, with the causes file read from disk.
func TestRunWritesPage(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "junit.xml")
	causes := filepath.Join(dir, "causes.tsv")
	page := filepath.Join(dir, "results.md")
	if err := os.WriteFile(report, []byte(pageReport), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(causes, []byte("Services should serve\tthe harness: ClusterIPs checked from host-network pods\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run([]string{"-page", page, "-causes", causes, "-title", "t", report}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\n1 passed, 3 failed, 3 skipped\n") {
		t.Errorf("summary:\n%s", out.String())
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "### the harness: ClusterIPs checked from host-network pods (1)") {
		t.Errorf("page:\n%s", b)
	}
	if err := run([]string{report + ".missing"}, &out); err == nil {
		t.Error("a missing report was accepted")
	}
}

// TestCausesFileParses: the harness's own causes file (hack/conformance/causes.tsv) is read by
// every run; a malformed line would stop the results page.
func TestCausesFileParses(t *testing.T) {
	known, err := readCauses(filepath.Join("..", "causes.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range known {
		if c.pattern.String() == "" || c.text == "" {
			t.Errorf("empty cause line: %+v", c)
		}
	}
}
