// Package schedtest holds builders for pods and nodes and fake-clientset
// helpers for the scheduler's tests. Test-only: production code never imports it.
package schedtest
