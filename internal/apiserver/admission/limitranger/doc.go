// Package limitranger is the LimitRanger admission plugin: the namespace's LimitRange objects give
// a new pod's containers their default requests and limits (recorded in the kubernetes.io/limit-ranger
// annotation, as upstream), and their min, max and maxLimitRequestRatio bound containers, pods and
// claims, refused with upstream's messages.
//
// Default and Check are pure and table-tested; the plugin lists the LimitRanges. Pod updates are
// not judged (containers' resources cannot change through an update), nor subresources.
package limitranger
