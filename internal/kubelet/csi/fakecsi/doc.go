// Package fakecsi is a CSI node plugin for tests: it serves the CSI Identity and Node services and
// the kubelet plugin registration service (what csi-node-driver-registrar serves) on unix sockets,
// records every call in order, and stands for a mount with the file system alone (a published
// target is a directory holding a marker file, a block target a file), so tests need no
// privileges. Errors can be injected per method.
package fakecsi
