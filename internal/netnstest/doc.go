// Package netnstest holds the network-namespace plumbing that tests of host networking share
// (the service proxy, the pod network agent): a namespace of the test's own with a unique name,
// removed in cleanup; running code on an OS thread inside a namespace; running a command and
// failing the test with its output.
//
// It owns only namespaces it creates itself (named "<prefix>-<random>") and never touches the
// host's own namespace, interfaces or rules. It must not import anything of skiff's: production
// code never links it, and the packages whose tests use it stay independent of each other.
package netnstest
