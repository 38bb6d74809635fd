// Package simnode holds end-to-end tests of internal/simnode against a real skiff server (the
// binary, started per test on free loopback ports) and, in cmd/simnode, a command that attaches
// simulated nodes to a running cluster. It must not reach into the server's internals: everything
// goes through client-go, as for any other client.
package simnode
