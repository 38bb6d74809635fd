package conformance

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// selection runs a harness script with --print-selection and answers its lines: the label
// filters, the focus, and the skip of the suite (checked here for the default suite only).
func selection(t *testing.T, script string, args ...string) (parallel, serial, focus string, err error) {
	parallel, serial, focus, _, err = selectionWithSkip(t, script, args...)
	return parallel, serial, focus, err
}

func selectionWithSkip(t *testing.T, script string, args ...string) (parallel, serial, focus, skip string, err error) {
	t.Helper()
	out, err := exec.Command("bash", append([]string{filepath.Join("..", script), "--print-selection"}, args...)...).CombinedOutput()
	if err != nil {
		return "", "", "", "", &exec.ExitError{Stderr: out}
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%s %v: want 4 lines, got %q", script, args, out)
	}
	return strings.TrimPrefix(lines[0], "parallel: "), strings.TrimPrefix(lines[1], "serial: "), strings.TrimPrefix(lines[2], "focus: "),
		strings.TrimPrefix(lines[3], "skip: "), nil
}

// TestDefaultSuiteSkipsWhatKindSkips: the default suite leaves out what Kubernetes' kind jobs
// skip for want of an NFS server in the kernel or a cloud load balancer; the other suites skip
// nothing.
func TestDefaultSuiteSkipsWhatKindSkips(t *testing.T) {
	for _, tc := range []struct {
		script string
		args   []string
		skip   string
	}{
		{"e2e.sh", nil, "NFS|nfs|LoadBalancer|load.balancer|PodSecurityPolicy"},
		{"conformance.sh", nil, ""},
		{"conformance.sh", []string{"--suite", "csi"}, ""},
	} {
		_, _, _, skip, err := selectionWithSkip(t, tc.script, tc.args...)
		if err != nil || skip != tc.skip {
			t.Errorf("%s %v: skip %q (%v), want %q", tc.script, tc.args, skip, err, tc.skip)
		}
	}
}

// TestSuiteSelection: each suite's label filters are the selection its issue names (the kind
// CI job's for default), --sig narrows both runs to a SIG's label, --sctp off leaves netpol's
// SCTP specs out, and hack/e2e.sh is the default suite unless told otherwise.
func TestSuiteSelection(t *testing.T) {
	const stable = "!Slow && !Disruptive && !Flaky"
	for _, tc := range []struct {
		script                  string
		args                    []string
		parallel, serial, focus string
	}{
		{"conformance.sh", nil, "Conformance && !Serial && !Disruptive", "Conformance && Serial", ""},
		{"conformance.sh", []string{"--no-disruptive"}, "Conformance && !Serial && !Disruptive", "Conformance && Serial && !Disruptive", ""},
		{"conformance.sh", []string{"--suite", "default"}, "Feature: isEmpty && !Serial && " + stable, "Feature: isEmpty && Serial && " + stable, ""},
		{"e2e.sh", nil, "Feature: isEmpty && !Serial && " + stable, "Feature: isEmpty && Serial && " + stable, ""},
		{"e2e.sh", []string{"--sig", "network"}, "(Feature: isEmpty && !Serial && " + stable + ") && sig-network", "(Feature: isEmpty && Serial && " + stable + ") && sig-network", ""},
		{"e2e.sh", []string{"--suite", "netpol", "--sctp", "on"}, "Feature: containsAny NetworkPolicy && !Serial && " + stable, "Feature: containsAny NetworkPolicy && Serial && " + stable, ""},
		// Without SCTP in the kernel (--sctp auto there) the SCTP specs are left out: they cannot pass.
		{"conformance.sh", []string{"--suite", "netpol", "--sctp", "off"}, "Feature: containsAny NetworkPolicy && !Serial && " + stable + " && !Feature: containsAny SCTPConnectivity",
			"Feature: containsAny NetworkPolicy && Serial && " + stable + " && !Feature: containsAny SCTPConnectivity", ""},
		// Only netpol selects SCTP specs: --sctp changes no other suite.
		{"conformance.sh", []string{"--sctp", "off"}, "Conformance && !Serial && !Disruptive", "Conformance && Serial", ""},
		{"conformance.sh", []string{"--suite", "csi", "--sig", "storage"}, "(!Serial && " + stable + ") && sig-storage", "(Serial && " + stable + ") && sig-storage",
			`\[sig-storage\] CSI (Volumes \[Driver: csi-hostpath\]|Mock)`},
	} {
		parallel, serial, focus, err := selection(t, tc.script, tc.args...)
		if err != nil {
			t.Errorf("%s %v: %v", tc.script, tc.args, err)
			continue
		}
		if parallel != tc.parallel || serial != tc.serial || focus != tc.focus {
			t.Errorf("%s %v:\n got %q | %q | %q\nwant %q | %q | %q", tc.script, tc.args, parallel, serial, focus, tc.parallel, tc.serial, tc.focus)
		}
	}
}

func TestSuiteSelectionRefusesUnknown(t *testing.T) {
	for _, args := range [][]string{{"--suite", "everything"}, {"--sig", "sig-node"}, {"--sig", "Node"}, {"--suite", "netpol", "--sctp", "maybe"}} {
		if _, _, _, err := selection(t, "conformance.sh", args...); err == nil {
			t.Errorf("%v was accepted", args)
		}
	}
}
