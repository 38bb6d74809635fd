// Package limitranger is the LimitRanger admission plugin: the namespace's LimitRange objects give
// a new pod's containers their default requests and limits (recorded in the kubernetes.io/limit-ranger
// annotation, as upstream), and their min, max and maxLimitRequestRatio bound containers, pods and
// claims, refused with upstream's messages.
//
// A pod's resize (pods/resize, the one subresource judged, as upstream) is defaulted and bounded
// like a create, without the annotation (upstream's resize strategy keeps only the containers'
// resources). Other pod updates are not judged (they cannot change containers' resources), nor a
// write to an object being deleted.
//
// Default and Check are pure and table-tested; the plugin lists the LimitRanges.
package limitranger
