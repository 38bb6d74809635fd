// Package serviceaccount is Kubernetes' ServiceAccount admission plugin: a new pod without a
// service account gets the namespace's "default" one, and unless the pod or its service account
// turns automounting off (or it is a mirror pod, which the API cannot give a token), a projected
// kube-api-access volume (a bound token the kubelet refreshes, the cluster CA bundle and the
// namespace) mounted at MountPath in every container that does not mount something there already.
package serviceaccount
