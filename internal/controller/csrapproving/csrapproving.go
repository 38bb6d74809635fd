package csrapproving

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certificateslisters "k8s.io/client-go/listers/certificates/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/authz/bootstrappolicy"
	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "csrapproving"

const (
	// ReasonAutoApproved is the Approved condition's reason, as Kubernetes writes it.
	ReasonAutoApproved = "AutoApproved"
	// BootstrappersGroup holds every user authenticated by a bootstrap token.
	BootstrappersGroup = "system:bootstrappers"
	// NodesGroup holds every node's user.
	NodesGroup = "system:nodes"
)

// recognizer is one kind of request the controller may approve: the subresource Kubernetes'
// SubjectAccessReview asks about, whether a request is of this kind, and the condition's message.
type recognizer struct {
	subresource string
	recognize   func(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool
	message     string
}

// recognizers lists the kinds in Kubernetes' order: a node renewing its own certificate first.
func recognizers() []recognizer {
	return []recognizer{
		{subresource: "selfnodeclient", recognize: isSelfNodeClientCert, message: "Auto approving self kubelet client certificate."},
		{subresource: "nodeclient", recognize: isNodeClientCert, message: "Auto approving kubelet client certificate."},
		{subresource: selfIngressClient, recognize: isSelfIngressClientCert, message: "Auto approving the node's HTTP data plane client certificate."},
	}
}

// selfIngressClient is skiff's own kind: a joined worker's HTTP data plane reads the TLS Secrets
// of every namespace, which its node's identity may not, so its node asks for a client
// certificate of system:skiff:ingress:<node> in system:skiff:ingresses (bound to the data
// plane's ClusterRole), for itself alone.
const selfIngressClient = "selfskiffingressclient"

func isSelfIngressClientCert(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool {
	node, ok := strings.CutPrefix(csr.Spec.Username, ctrlutil.NodeUserPrefix)
	return ok && node != "" && csr.Spec.SignerName == certificatesv1.KubeAPIServerClientSignerName &&
		req.Subject.CommonName == bootstrappolicy.SkiffIngressNodePrefix+node &&
		slices.Equal(req.Subject.Organization, []string{bootstrappolicy.SkiffIngressGroup}) &&
		!ctrlutil.HasSubjectAltNames(req) && ctrlutil.HasKubeletClientUsages(csr.Spec.Usages)
}

func isNodeClientCert(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool {
	return csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName &&
		ctrlutil.ValidateKubeletClientCSR(req, csr.Spec.Usages) == nil
}

func isSelfNodeClientCert(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool {
	return csr.Spec.Username == req.Subject.CommonName && isNodeClientCert(csr, req)
}

// Config is what the approver needs besides the common controller dependencies.
type Config struct {
	// Logger receives the controller's log lines; nil discards them.
	Logger *slog.Logger
}

// Controller approves node client requests.
type Controller struct {
	client kubernetes.Interface
	lister certificateslisters.CertificateSigningRequestLister
	nodes  corelisters.NodeLister
	clock  clock.PassiveClock
	log    *slog.Logger
	loop   *ctrlutil.Loop
	synced []cache.InformerSynced
}

// New builds the approver.
func New(deps ctrlutil.Deps, cfg Config) (*Controller, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	informer := deps.Informers.Certificates().V1().CertificateSigningRequests()
	nodes := deps.Informers.Core().V1().Nodes()
	c := &Controller{
		client: deps.Client, lister: informer.Lister(), nodes: nodes.Lister(), clock: deps.Clock, log: cfg.Logger,
		synced: []cache.InformerSynced{informer.Informer().HasSynced, nodes.Informer().HasSynced},
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.loop.Enqueue, UpdateFunc: func(_, o any) { c.loop.Enqueue(o) },
	}); err != nil {
		return nil, fmt.Errorf("csr informer handler: %w", err)
	}
	// A node's serving request waits for its Node and addresses: look at it again when they change.
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueServingRequestsOf, UpdateFunc: func(_, o any) { c.enqueueServingRequestsOf(o) },
	}); err != nil {
		return nil, fmt.Errorf("node informer handler: %w", err)
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced...) }

// Sync approves the request named key when it is undecided, unissued and a node client request
// its requestor may have approved automatically.
func (c *Controller) Sync(ctx context.Context, key string) error {
	csr, err := c.lister.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get csr %s: %w", key, err)
	}
	if approved, denied := ctrlutil.CSRApprovedOrDenied(csr); approved || denied || len(csr.Status.Certificate) > 0 {
		return nil
	}
	req, err := ctrlutil.ParseCSR(csr.Spec.Request)
	if err != nil {
		// The API server validated the request; one that does not parse is left for a person.
		c.log.Info("cannot parse certificate request; leaving it", "csr", csr.Name, "err", err)
		return nil
	}
	if csr.Spec.SignerName == certificatesv1.KubeletServingSignerName {
		return c.syncServing(ctx, csr, req)
	}
	for _, r := range recognizers() {
		if !r.recognize(csr, req) || !authorized(csr, r.subresource) {
			continue
		}
		return c.approve(ctx, csr, r.subresource, r.message)
	}
	return nil
}

// approve adds the Approved condition.
func (c *Controller) approve(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, kind, message string) error {
	now := metav1.NewTime(c.clock.Now())
	next := csr.DeepCopy()
	next.Status.Conditions = append(next.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
		Reason: ReasonAutoApproved, Message: message, LastUpdateTime: now, LastTransitionTime: now,
	})
	if _, err := c.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("approve csr %s: %w", csr.Name, err)
	}
	c.log.Info("approved certificate request", "csr", csr.Name, "requestor", csr.Spec.Username, "kind", kind)
	return nil
}

// authorized stands in for Kubernetes' SubjectAccessReview: may the requestor have a
// certificatesigningrequests/<subresource> "create" approved automatically? kubeadm binds
// "nodeclient" to system:bootstrappers and "selfnodeclient" to system:nodes, so those groups
// answer here. When skiff gains RBAC this becomes a SubjectAccessReview built from the request's
// username, uid, groups and extra (the spec fields the API server filled in), with verb "create",
// group "certificates.k8s.io", resource "certificatesigningrequests" and this subresource.
func authorized(csr *certificatesv1.CertificateSigningRequest, subresource string) bool {
	switch subresource {
	case "selfnodeclient", selfIngressClient:
		return slices.Contains(csr.Spec.Groups, NodesGroup)
	case "nodeclient":
		return slices.Contains(csr.Spec.Groups, BootstrappersGroup)
	}
	return false
}
