// Package importrules holds no code: its test is the one table of skiff's dependency rules (what may
// link what), checked over `go list -deps`, in the spirit of Kubernetes' .import-restrictions files.
// The rules are the README's "Layout" section; a new component adds its row here.
package importrules
