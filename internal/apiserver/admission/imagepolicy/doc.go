// Package imagepolicy is skiff's image policy admission plugin: an --image-policy file lists the
// image prefixes (registries, repositories) allowed by default and per namespace, and a pod with a
// container image outside its namespace's list is refused with a 403 naming the image, the
// container and the rule. Without a file every image is allowed.
//
// Loading and the decision (Policy.Check) are pure and table-tested; the plugin applies them to pod
// creates and updates (including ephemeral containers). It must not pull images or call out.
package imagepolicy
