// Package e2e drives the real skiff binary with the real kubectl, as a user would. Every test starts
// its own node on free loopback ports with a temporary data directory.
package e2e
