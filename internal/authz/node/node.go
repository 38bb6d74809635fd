package node

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/skiff-sh/skiff/internal/authz/rbac"
	"github.com/skiff-sh/skiff/internal/request"
)

const (
	nodesGroup     = "system:nodes"
	nodeUserPrefix = "system:node:"
	leaseNamespace = "kube-node-lease"
)

// PodsOnNode lists the pods bound to a node (an informer index on spec.nodeName).
type PodsOnNode func(nodeName string) ([]*corev1.Pod, error)

// VolumeNamed reads a PersistentVolume (from an informer cache).
type VolumeNamed func(name string) (*corev1.PersistentVolume, error)

// Authorizer is the Node authorizer.
type Authorizer struct {
	pods      PodsOnNode
	pvcs      corelisters.PersistentVolumeClaimLister
	volume    VolumeNamed
	nodeRules []rbacv1.PolicyRule
}

// New returns a Node authorizer; nodeRules are the system:node role's rules, which apply to
// everything the authorizer does not restrict itself.
func New(pods PodsOnNode, pvcs corelisters.PersistentVolumeClaimLister, volume VolumeNamed, nodeRules []rbacv1.PolicyRule) *Authorizer {
	return &Authorizer{pods: pods, pvcs: pvcs, volume: volume, nodeRules: nodeRules}
}

// NodeName returns the node a user is the kubelet of, if it is one.
func NodeName(user *request.UserInfo) (string, bool) {
	if !strings.HasPrefix(user.Name, nodeUserPrefix) {
		return "", false
	}
	for _, g := range user.Groups {
		if g == nodesGroup {
			name := strings.TrimPrefix(user.Name, nodeUserPrefix)
			return name, name != ""
		}
	}
	return "", false
}

// Authorize has no opinion (false, "") on callers that are not nodes.
func (a *Authorizer) Authorize(_ context.Context, user *request.UserInfo, info *request.RequestInfo) (bool, string) {
	nodeName, ok := NodeName(user)
	if !ok {
		return false, ""
	}
	if info.IsResourceRequest && info.APIGroup == "" {
		switch {
		case info.Resource == "secrets" && info.Subresource == "",
			info.Resource == "configmaps" && info.Subresource == "",
			info.Resource == "persistentvolumeclaims" && info.Subresource == "",
			info.Resource == "persistentvolumes" && info.Subresource == "":
			return a.authorizeReadOfPodObject(nodeName, info)
		case info.Resource == "serviceaccounts" && !(info.Verb == "get" && info.Subresource == ""):
			// Reads of a service account follow the node rules; anything else must be a token
			// request for the service account of a pod on the node (NodeRestriction then checks
			// the token is bound to that pod).
			return a.authorizeCreateToken(nodeName, info)
		}
	}
	if info.IsResourceRequest && info.APIGroup == "coordination.k8s.io" && info.Resource == "leases" {
		return authorizeLease(nodeName, info)
	}
	if rbac.RulesAllow(info, a.nodeRules) {
		return true, ""
	}
	return false, ""
}

func (a *Authorizer) authorizeCreateToken(nodeName string, info *request.RequestInfo) (bool, string) {
	if info.Verb != "create" || info.Name == "" {
		return false, "can only create tokens for individual service accounts"
	}
	if info.Subresource != "token" {
		return false, "can only create token subresource of serviceaccount"
	}
	return a.related(nodeName, info)
}

func (a *Authorizer) authorizeReadOfPodObject(nodeName string, info *request.RequestInfo) (bool, string) {
	if info.Verb != "get" && info.Verb != "list" && info.Verb != "watch" {
		return false, "can only read resources of this type"
	}
	if info.Name == "" {
		// A list or watch of every object of the type: nodes may only read single objects.
		return false, "can only read namespaced object of this type"
	}
	return a.related(nodeName, info)
}

// related allows the request when a pod bound to the node references the object.
func (a *Authorizer) related(nodeName string, info *request.RequestInfo) (bool, string) {
	pods, err := a.pods(nodeName)
	if err != nil {
		return false, fmt.Sprintf("list pods of node %q: %v", nodeName, err)
	}
	for _, pod := range pods {
		if a.podReferences(pod, info) {
			return true, ""
		}
	}
	return false, fmt.Sprintf("no relationship found between node '%s' and this object", nodeName)
}

func (a *Authorizer) podReferences(pod *corev1.Pod, info *request.RequestInfo) bool {
	switch info.Resource {
	case "persistentvolumes":
		return slices.Contains(a.podVolumes(pod), info.Name)
	case "secrets":
		// A secret the pod's volumes name (CSI stage, publish and expand secrets), in the
		// namespace their reference says, as Kubernetes' graph has PV -> secret edges.
		for _, name := range a.podVolumes(pod) {
			pv, err := a.volume(name)
			if err == nil && slices.Contains(volumeSecrets(pv), info.Namespace+"/"+info.Name) {
				return true
			}
		}
	}
	if pod.Namespace != info.Namespace {
		return false
	}
	refs := PodReferences(pod)
	var names []string
	switch info.Resource {
	case "secrets":
		names = refs.Secrets
	case "configmaps":
		names = refs.ConfigMaps
	case "persistentvolumeclaims":
		names = refs.PVCs
	case "serviceaccounts":
		names = []string{refs.ServiceAccount}
	}
	for _, n := range names {
		if n == info.Name {
			return true
		}
	}
	return false
}

// podVolumes are the names of the volumes bound to the pod's claims.
func (a *Authorizer) podVolumes(pod *corev1.Pod) []string {
	var out []string
	for _, claim := range PodReferences(pod).PVCs {
		pvc, err := a.pvcs.PersistentVolumeClaims(pod.Namespace).Get(claim)
		if err == nil && pvc.Spec.VolumeName != "" {
			out = append(out, pvc.Spec.VolumeName)
		}
	}
	return out
}

// volumeSecrets are the secrets (namespace/name) a CSI volume names for its node and controller
// calls, the ones Kubernetes' Node authorizer lets a node holding the volume read.
func volumeSecrets(pv *corev1.PersistentVolume) []string {
	src := pv.Spec.CSI
	if src == nil {
		return nil
	}
	var out []string
	for _, ref := range []*corev1.SecretReference{src.NodeStageSecretRef, src.NodePublishSecretRef, src.NodeExpandSecretRef,
		src.ControllerPublishSecretRef, src.ControllerExpandSecretRef} {
		if ref != nil {
			out = append(out, ref.Namespace+"/"+ref.Name)
		}
	}
	return out
}

func authorizeLease(nodeName string, info *request.RequestInfo) (bool, string) {
	switch info.Verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return false, "can only get, create, update, patch, or delete a node lease"
	}
	if info.Namespace != leaseNamespace {
		return false, fmt.Sprintf("can only access leases in the %q system namespace", leaseNamespace)
	}
	// A create names the lease in its body; NodeRestriction admission checks it there.
	if info.Verb != "create" && info.Name != nodeName {
		return false, "can only access node lease with the same name as the requesting node"
	}
	return true, ""
}
