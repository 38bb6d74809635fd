package cluster

import "k8s.io/utils/clock"

// certRenewer is the node's renewal loop on the real clock.
func (n *Node) certRenewer() *certRenewer {
	return &certRenewer{dataDir: n.cfg.DataDir, lifetime: n.cfg.LeafCertificateLifetime, clock: clock.RealClock{}, log: n.cfg.Logger.With("component", "pki")}
}
