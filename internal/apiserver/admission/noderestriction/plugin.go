package noderestriction

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/authz/node"
)

// Name is Kubernetes' name of the plugin.
const Name = "NodeRestriction"

// Plugin is Kubernetes' NodeRestriction admission plugin: a kubelet may write only its own
// Node (and may not set labels outside the prefixes kubelets are trusted with, nor change taints),
// only pods bound to it (status, deletion, eviction, mirror pods), only its own node Lease, and
// may request service account tokens only bound to a pod on it. The Node
// authorizer decided the request is of a kind a node may make; this decides about the object.
type Plugin struct{}

func (Plugin) Name() string { return Name }

func (Plugin) Admit(context.Context, *admission.Attributes, admission.Lookup) error { return nil }

func (Plugin) Validate(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) error {
	// Writes only, as upstream's: a CONNECT (exec, proxy) is the authorizer's business.
	if a.User == nil || a.Verb == "connect" {
		return nil
	}
	nodeName, ok := node.NodeName(a.User)
	if !ok {
		return nil
	}
	gr := a.Resource.GroupResource()
	forbid := func(format string, args ...any) error {
		return apierrors.NewForbidden(gr, a.Name, fmt.Errorf(format, args...))
	}
	switch {
	case gr.Group == "" && gr.Resource == "pods":
		switch a.Subresource {
		case "", "status":
			return admitPod(a, nodeName, forbid)
		case "eviction":
			return admitPodEviction(ctx, a, lookup, nodeName, forbid)
		default:
			return forbid("unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.Subresource)
		}
	case gr.Group == "" && gr.Resource == "serviceaccounts":
		return admitTokenRequest(ctx, a, lookup, nodeName, forbid)
	case gr.Group == "" && gr.Resource == "nodes":
		if a.Name != nodeName && !(a.Verb == "create" && objectName(a.Object) == nodeName) {
			return forbid("node %q is not allowed to modify node %q", nodeName, a.Name)
		}
		newNode, _ := a.Object.(*corev1.Node)
		if newNode == nil {
			return nil
		}
		oldNode, _ := a.OldObject.(*corev1.Node)
		if bad := ForbiddenNodeLabels(newNode, oldNode); len(bad) > 0 {
			return forbid("node %q is not allowed to modify labels: %s", nodeName, strings.Join(bad, ", "))
		}
		if oldNode != nil && a.Subresource == "" && !reflect.DeepEqual(oldNode.Spec.Taints, newNode.Spec.Taints) {
			return forbid("node %q is not allowed to modify taints", nodeName)
		}
	case gr.Group == coordinationv1.GroupName && gr.Resource == "leases":
		if a.Namespace != "kube-node-lease" || (a.Name != nodeName && objectName(a.Object) != nodeName) {
			return forbid("can only access node lease with the same name as the requesting node")
		}
	}
	return nil
}

func objectName(obj any) string {
	if m, ok := obj.(interface{ GetName() string }); ok && m != nil {
		return m.GetName()
	}
	return ""
}

func admitPod(a *admission.Attributes, nodeName string, forbid func(string, ...any) error) error {
	pod, _ := a.Object.(*corev1.Pod)
	old, _ := a.OldObject.(*corev1.Pod)
	switch a.Verb {
	case "create":
		if a.Subresource != "" {
			return nil
		}
		if pod == nil {
			return nil
		}
		if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
			return forbid("pod does not have %q annotation, node %q can only create mirror pods", corev1.MirrorPodAnnotationKey, nodeName)
		}
		if pod.Spec.NodeName != nodeName {
			return forbid("node %q can only create pods with spec.nodeName set to itself", nodeName)
		}
	case "update":
		if a.Subresource != "status" {
			return forbid("node %q may only update the status of pods", nodeName)
		}
		if old != nil && old.Spec.NodeName != nodeName {
			return forbid("node %q can only update pod status for pods with spec.nodeName set to itself", nodeName)
		}
		// /status may change a pod's labels, but not a kubelet's: labels select pods for
		// Services and controllers.
		if old != nil && pod != nil && !maps.Equal(old.Labels, pod.Labels) {
			return forbid("node %q cannot update labels through pod status", nodeName)
		}
	case "delete":
		if old != nil && old.Spec.NodeName != nodeName {
			return forbid("node %q can only delete pods with spec.nodeName set to itself", nodeName)
		}
	}
	return nil
}

// kubeletLabelNamespaces and kubeletLabels are what a kubelet may set on its Node in the
// kubernetes.io and k8s.io namespaces; node-restriction.kubernetes.io/ is reserved for admins.
var (
	kubeletLabelNamespaces = []string{"kubelet.kubernetes.io", "node.kubernetes.io"}
	kubeletLabels          = []string{
		"kubernetes.io/hostname", "kubernetes.io/arch", "kubernetes.io/os",
		"beta.kubernetes.io/arch", "beta.kubernetes.io/os", "beta.kubernetes.io/instance-type",
		"node.kubernetes.io/instance-type", "topology.kubernetes.io/region", "topology.kubernetes.io/zone",
		"failure-domain.beta.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
	}
)

// ForbiddenNodeLabels lists the labels a kubelet adds or changes (against old, nil on create) that
// it may not set: those in node-restriction.kubernetes.io/, and those in the kubernetes.io and
// k8s.io namespaces that are not kubelet labels.
func ForbiddenNodeLabels(n, old *corev1.Node) []string {
	var bad []string
	for k, v := range n.Labels {
		if old != nil {
			if ov, ok := old.Labels[k]; ok && ov == v {
				continue
			}
		}
		if !kubeletMaySet(k) {
			bad = append(bad, k)
		}
	}
	if old != nil {
		for k := range old.Labels {
			if _, kept := n.Labels[k]; !kept && !kubeletMaySet(k) {
				bad = append(bad, k)
			}
		}
	}
	return bad
}

func kubeletMaySet(key string) bool {
	prefix, _, hasPrefix := strings.Cut(key, "/")
	if !hasPrefix {
		return true
	}
	if prefix == "node-restriction.kubernetes.io" || strings.HasSuffix(prefix, ".node-restriction.kubernetes.io") {
		return false
	}
	for _, l := range kubeletLabels {
		if key == l {
			return true
		}
	}
	for _, ns := range kubeletLabelNamespaces {
		if prefix == ns || strings.HasSuffix(prefix, "."+ns) {
			return true
		}
	}
	inK8s := prefix == "kubernetes.io" || strings.HasSuffix(prefix, ".kubernetes.io") || prefix == "k8s.io" || strings.HasSuffix(prefix, ".k8s.io")
	return !inK8s
}

// admitPodEviction lets a node evict only pods bound to it. The pod is the one the URL names, or
// the Eviction's when the URL names none.
func admitPodEviction(ctx context.Context, a *admission.Attributes, lookup admission.Lookup, nodeName string, forbid func(string, ...any) error) error {
	if a.Verb != "create" {
		return forbid("unexpected operation %s", a.Verb)
	}
	eviction, ok := a.Object.(*policyv1.Eviction)
	if !ok {
		return forbid("unexpected type %T", a.Object)
	}
	podName := a.Name
	if podName == "" {
		podName = eviction.Name
	}
	if podName == "" {
		return forbid("could not determine pod from request data")
	}
	pod, err := lookupPod(ctx, lookup, a.Namespace, podName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return err
		}
		return forbid("%v", err)
	}
	if pod.Spec.NodeName != nodeName {
		return forbid("node %s can only evict pods with spec.nodeName set to itself", nodeName)
	}
	return nil
}

// admitTokenRequest lets a node request a service account token only when the token is bound to
// a pod (by name and uid) that is bound to the node. The Node authorizer already checked that a
// pod on the node uses the service account.
func admitTokenRequest(ctx context.Context, a *admission.Attributes, lookup admission.Lookup, nodeName string, forbid func(string, ...any) error) error {
	if a.Verb != "create" || a.Subresource != "token" {
		return nil
	}
	tr, ok := a.Object.(*authenticationv1.TokenRequest)
	if !ok {
		return forbid("unexpected type %T", a.Object)
	}
	ref := tr.Spec.BoundObjectRef
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name == "" {
		return forbid("node requested token not bound to a pod")
	}
	if ref.UID == "" {
		return forbid("node requested token with a pod binding without a uid")
	}
	pod, err := lookupPod(ctx, lookup, a.Namespace, ref.Name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return err
		}
		return forbid("%v", err)
	}
	if ref.UID != pod.UID {
		return forbid("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID)
	}
	if pod.Spec.NodeName != nodeName {
		return forbid("node requested token bound to a pod scheduled on a different node")
	}
	return nil
}

func lookupPod(ctx context.Context, lookup admission.Lookup, namespace, name string) (*corev1.Pod, error) {
	if lookup == nil {
		return nil, fmt.Errorf("no lookup to read pod %s/%s", namespace, name)
	}
	obj, err := lookup.Get(ctx, "", "pods", namespace, name)
	if err != nil {
		return nil, err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("pod %s/%s: unexpected type %T", namespace, name, obj)
	}
	return pod, nil
}
