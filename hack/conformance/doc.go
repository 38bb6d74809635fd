// Package conformance holds the tests of the conformance harness's shell scripts
// (hack/conformance.sh and the scripts beside this file); the harness itself is those scripts,
// and junitsum summarizes their junit reports.
package conformance
