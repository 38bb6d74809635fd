// Package importrules holds no code: its test is the one table of skiff's dependency rules (what may
// link what), checked over `go list -deps`, in the spirit of Kubernetes' .import-restrictions files.
// The rules are written out at the end of docs/design/layout.md; a new component adds its row here.
//
// It also checks the docs as repository facts (docs_test.go): every relative link of README.md and
// docs/ resolves to a file and heading that exist, and docs/design/layout.md names every package of
// the module, so a new package or a moved page cannot leave the newcomer's map wrong.
package importrules
