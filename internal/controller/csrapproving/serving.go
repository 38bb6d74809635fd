package csrapproving

import (
	"context"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// servingMessage is the Approved condition's message for a kubelet serving certificate.
const servingMessage = "Auto approving kubelet serving certificate: its names are the node's own (skiff)."

// ServingRequestMatchesNode is skiff's rule for kubernetes.io/kubelet-serving requests, which
// upstream leaves to a person or an external approver: a node may have a serving certificate
// approved automatically when it asks for itself (the requestor is the common name, a
// system:node:<name> in system:nodes) and every name in it is one of its Node's: DNS names among
// the Node's host names (and its name), IP addresses among its addresses. nil means approve.
func ServingRequestMatchesNode(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest, node *corev1.Node) error {
	if err := ctrlutil.ValidateKubeletServingCSR(req, csr.Spec.Usages); err != nil {
		return err
	}
	if csr.Spec.Username != req.Subject.CommonName || !slices.Contains(csr.Spec.Groups, NodesGroup) {
		return fmt.Errorf("requested by %s, not by the node %s itself", csr.Spec.Username, req.Subject.CommonName)
	}
	if node == nil || "system:node:"+node.Name != req.Subject.CommonName {
		return fmt.Errorf("no Node for %s", req.Subject.CommonName)
	}
	names := []string{node.Name}
	var ips []string
	for _, a := range node.Status.Addresses {
		switch a.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			names = append(names, a.Address)
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			ips = append(ips, a.Address)
		}
	}
	for _, d := range req.DNSNames {
		if !slices.Contains(names, d) {
			return fmt.Errorf("DNS name %q is not one of node %s's names %v", d, node.Name, names)
		}
	}
	for _, ip := range req.IPAddresses {
		if !slices.Contains(ips, ip.String()) {
			return fmt.Errorf("IP address %s is not one of node %s's addresses %v", ip, node.Name, ips)
		}
	}
	return nil
}

// syncServing approves a node's own serving request whose names are its Node's; a request for a
// node not registered yet is retried (the kubelet asks for its serving certificate as it registers).
func (c *Controller) syncServing(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) error {
	name, ok := strings.CutPrefix(req.Subject.CommonName, "system:node:")
	if !ok || csr.Spec.Username != req.Subject.CommonName || !slices.Contains(csr.Spec.Groups, NodesGroup) {
		return nil // not a node asking for itself: never approved automatically
	}
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("serving csr %s: node %s not registered yet", csr.Name, name)
	}
	if err != nil {
		return fmt.Errorf("serving csr %s: get node %s: %w", csr.Name, name, err)
	}
	if len(req.IPAddresses) > 0 && !hasIPAddress(node) {
		// Registered, but its addresses are not reported yet: look again.
		return fmt.Errorf("serving csr %s: node %s has not reported its addresses yet", csr.Name, name)
	}
	if err := ServingRequestMatchesNode(csr, req, node); err != nil {
		c.log.Info("not approving kubelet serving request; leaving it for a person", "csr", csr.Name, "reason", err.Error())
		return nil
	}
	return c.approve(ctx, csr, "kubelet-serving", servingMessage)
}

func hasIPAddress(node *corev1.Node) bool {
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP || a.Type == corev1.NodeExternalIP {
			return true
		}
	}
	return false
}

// enqueueServingRequestsOf queues the undecided kubelet-serving requests of a Node's node.
func (c *Controller) enqueueServingRequestsOf(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	all, err := c.lister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, csr := range all {
		if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName || csr.Spec.Username != "system:node:"+node.Name {
			continue
		}
		if approved, denied := ctrlutil.CSRApprovedOrDenied(csr); approved || denied {
			continue
		}
		c.loop.Enqueue(csr)
	}
}
