// Package images builds container image archives offline and loads them into a
// node's containerd, for clusters that cannot reach a registry.
//
// It owns the busybox-based images skiff's tests and the kubelet's pod sandbox
// use ("localhost/busybox:local" and the pause image "localhost/pause:local"):
// a single layer holding the static busybox binary from the host with one
// symlink per applet, written as a docker-archive tar. The output is byte for
// byte deterministic (fixed modification times, sorted entries, no creation
// date), so image IDs and digests are stable across builds and machines with the
// same busybox.
//
// It must not talk to the API server and must not start containerd; Import only
// drives an already running containerd through its ctr client.
package images
