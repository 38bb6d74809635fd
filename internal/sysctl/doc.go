// Package sysctl holds Kubernetes' rules for sysctl names that both the API's pod validation and the
// kubelet's admission apply: the slash-separated spelling and which kernel namespace a sysctl
// belongs to. It imports nothing of skiff.
package sysctl
