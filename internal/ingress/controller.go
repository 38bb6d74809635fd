package ingress

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
	"github.com/skiff-sh/skiff/internal/ingress/routes"
	"github.com/skiff-sh/skiff/internal/leader"
)

// NodeOptions configure RunNode.
type NodeOptions struct {
	Client kubernetes.Interface
	// HTTPPort and HTTPSPort are the data plane's Ingress ports; zero leaves one out.
	HTTPPort, HTTPSPort int32
	// Set hands a new table to the data plane (dataplane.Server.Set).
	Set    func(routes.Table) error
	Clock  clock.Clock
	Logger *slog.Logger
	// RetryPeriod is the wait before a table the data plane refused (a port it could not bind)
	// is handed over again; 5 s when zero.
	RetryPeriod time.Duration
}

// RunNode watches IngressClasses, Ingresses, Services, EndpointSlices and TLS Secrets and hands
// the data plane a new table (Translate) after every change, until ctx ends. Changes that arrive
// while a table is built are folded into the next one.
func RunNode(ctx context.Context, o NodeOptions) error {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.RetryPeriod == 0 {
		o.RetryPeriod = 5 * time.Second
	}
	dflt, err := defaultCertificate(o.Clock.Now())
	if err != nil {
		return err
	}
	f := informers.NewSharedInformerFactory(o.Client, 0)
	// Only TLS Secrets: the data plane never holds the cluster's other Secrets.
	tlsOnly := informers.NewSharedInformerFactoryWithOptions(o.Client, 0, informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.FieldSelector = fields.OneTermEqualSelector("type", string(corev1.SecretTypeTLS)).String()
	}))
	classes := f.Networking().V1().IngressClasses()
	ings := f.Networking().V1().Ingresses()
	svcs := f.Core().V1().Services()
	slices := f.Discovery().V1().EndpointSlices()
	secrets := tlsOnly.Core().V1().Secrets()
	defer f.Shutdown()
	defer tlsOnly.Shutdown()
	dirty, err := ctrlutil.WatchLevel(ctx, []ctrlutil.InformerFactory{f, tlsOnly},
		classes.Informer(), ings.Informer(), svcs.Informer(), slices.Informer(), secrets.Informer())
	if err != nil {
		return fmt.Errorf("ingress informers: %w", err)
	}
	return ctrlutil.RunLevel(ctx, dirty, o.Clock, o.RetryPeriod, func() error {
		in := Input{HTTPPort: o.HTTPPort, HTTPSPort: o.HTTPSPort, DefaultCertificate: dflt}
		in.Classes, _ = classes.Lister().List(labels.Everything())
		in.Ingresses, _ = ings.Lister().List(labels.Everything())
		in.Services, _ = svcs.Lister().List(labels.Everything())
		in.Slices, _ = slices.Lister().List(labels.Everything())
		in.Secrets, _ = secrets.Lister().List(labels.Everything())
		t, problems := Translate(in)
		for _, p := range problems {
			o.Logger.Debug("ingress not fully served", "ingress", p.Namespace+"/"+p.Name, "problem", p.Message)
		}
		if err := o.Set(t); err != nil {
			return fmt.Errorf("data plane refused part of the ingress table: %w", err)
		}
		return nil
	}, o.Logger)
}

// defaultCertificate is the self-signed certificate served to clients whose SNI no Ingress's
// Secret covers, as ingress-nginx serves its "Fake Certificate".
func defaultCertificate(now time.Time) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("default ingress certificate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("default ingress certificate serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "skiff ingress default certificate"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("default ingress certificate: %w", err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// StatusLease is the Lease the status controller campaigns for.
const StatusLease = "skiff-ingress-status"

// StatusOptions configure RunStatus.
type StatusOptions struct {
	Client   kubernetes.Interface
	Identity string
	// LeaseDuration, RenewDeadline, RetryPeriod: the Lease's timing (leader's defaults when zero).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Fence, when set, is the fence of this component's client transport: Campaign gives it each
	// term, so the client writes only while the Lease is confirmed held (leader.Fence).
	Fence  *leader.Fence
	Clock  clock.Clock
	Logger *slog.Logger
}

// RunStatus campaigns for the StatusLease and, while it holds it, creates the IngressClass
// `skiff` when absent (PlanClass) and keeps the status.loadBalancer of every served Ingress at
// the data plane nodes' addresses (PlanStatus), until ctx ends.
func RunStatus(ctx context.Context, o StatusOptions) error {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return leader.Campaign(ctx, leader.Config{
		Client: o.Client, Name: StatusLease, Identity: o.Identity,
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod,
		Policy: leader.CampaignAgain, Logger: o.Logger, Fence: o.Fence,
	}, func(ctx context.Context) error { return statusTerm(ctx, &o) })
}

func statusTerm(ctx context.Context, o *StatusOptions) error {
	f := informers.NewSharedInformerFactory(o.Client, 0)
	classes := f.Networking().V1().IngressClasses()
	ings := f.Networking().V1().Ingresses()
	nodes := f.Core().V1().Nodes()
	defer f.Shutdown()
	dirty, err := ctrlutil.WatchLevel(ctx, []ctrlutil.InformerFactory{f}, classes.Informer(), ings.Informer(), nodes.Informer())
	if err != nil {
		return fmt.Errorf("ingress status informers: %w", err)
	}
	return ctrlutil.RunLevel(ctx, dirty, o.Clock, 2*time.Second, func() error {
		cl, _ := classes.Lister().List(labels.Everything())
		il, _ := ings.Lister().List(labels.Everything())
		nl, _ := nodes.Lister().List(labels.Everything())
		return syncStatus(ctx, o, cl, il, nl)
	}, o.Logger)
}

func syncStatus(ctx context.Context, o *StatusOptions, cl []*networkingv1.IngressClass, il []*networkingv1.Ingress, nl []*corev1.Node) error {
	var errs []error
	if c := PlanClass(cl); c != nil {
		_, err := o.Client.NetworkingV1().IngressClasses().Create(ctx, c, metav1.CreateOptions{})
		switch {
		case err == nil:
			o.Logger.Info("created IngressClass", "name", c.Name, "default", c.Annotations[DefaultClassAnnotation] == "true")
		case !apierrors.IsAlreadyExists(err):
			errs = append(errs, fmt.Errorf("create IngressClass %s: %w", c.Name, err))
		}
	}
	for _, u := range PlanStatus(il, cl, nl) {
		ing := u.Ingress.DeepCopy()
		ing.Status.LoadBalancer = u.Status
		if _, err := o.Client.NetworkingV1().Ingresses(ing.Namespace).UpdateStatus(ctx, ing, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			// A conflict means the informer brings a newer copy, and with it another sync.
			errs = append(errs, fmt.Errorf("update status of Ingress %s/%s: %w", ing.Namespace, ing.Name, err))
			continue
		}
		o.Logger.Debug("ingress status updated", "ingress", ing.Namespace+"/"+ing.Name, "addresses", len(u.Status.Ingress))
	}
	return errors.Join(errs...)
}
