// Package cloudroutes is the cloud controller manager's route controller: every node with a
// podCIDR gets a route through the cloud provider's Routes (created when missing, deleted when its
// node is gone), and once its route exists the node's NetworkUnavailable condition is set False
// (reason RouteCreated), as upstream's route controller does.
//
// Plan is the pure part, table-tested. It must not program routes on nodes itself (with the
// built-in local provider the workers do, from the Node objects) or reach the cluster other than
// through client-go.
package cloudroutes
