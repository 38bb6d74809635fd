// Package helper holds the matching rules several plugins share: node
// selectors and affinity, taints and tolerations. Pure functions, no state.
package helper
