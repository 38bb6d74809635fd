package rootcacertpublisher

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "root-ca-cert-publisher"

// ConfigMapName and DataKey are what pods' kube-api-access volumes read.
const (
	ConfigMapName = "kube-root-ca.crt"
	DataKey       = "ca.crt"
	// descriptionAnnotation explains the ConfigMap, as Kubernetes annotates it.
	descriptionAnnotation = "kubernetes.io/description"
	description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Controller publishes the CA bundle.
type Controller struct {
	client kubernetes.Interface
	// rootCA is the bundle published; it changes when file does (a CA rotation).
	rootCA atomic.Pointer[string]
	// file, when set, is the bundle's file, read again every followEvery.
	file        string
	followEvery time.Duration
	clock       clock.WithTicker
	log         *slog.Logger
	nsLister    corelisters.NamespaceLister
	cmLister    corelisters.ConfigMapLister
	loop        *ctrlutil.Loop
	synced      []cache.InformerSynced
}

// New builds the controller publishing rootCA (PEM).
func New(deps ctrlutil.Deps, rootCA []byte) (*Controller, error) {
	if len(rootCA) == 0 {
		return nil, fmt.Errorf("%s: a root CA bundle is required", Name)
	}
	nsInformer := deps.Informers.Core().V1().Namespaces()
	cmInformer := deps.Informers.Core().V1().ConfigMaps()
	c := &Controller{
		client: deps.Client, clock: deps.Clock, log: deps.Log(),
		nsLister: nsInformer.Lister(), cmLister: cmInformer.Lister(),
		synced: []cache.InformerSynced{nsInformer.Informer().HasSynced, cmInformer.Informer().HasSynced},
	}
	bundle := string(rootCA)
	c.rootCA.Store(&bundle)
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	if _, err := nsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.loop.Enqueue, UpdateFunc: func(_, o any) { c.loop.Enqueue(o) },
	}); err != nil {
		return nil, fmt.Errorf("namespace informer handler: %w", err)
	}
	onConfigMap := func(o any) {
		if tomb, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = tomb.Obj
		}
		if cm, ok := o.(*corev1.ConfigMap); ok && cm.Name == ConfigMapName {
			c.loop.Queue.Add(cm.Namespace)
		}
	}
	if _, err := cmInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, o any) { onConfigMap(o) }, DeleteFunc: onConfigMap,
	}); err != nil {
		return nil, fmt.Errorf("configmap informer handler: %w", err)
	}
	return c, nil
}

// NewFollowing builds the controller publishing the bundle in file as it is: read now, then every
// every, so a CA rotation's bundle reaches every namespace's kube-root-ca.crt (and the pods that
// project it) without a restart; kube-controller-manager reads --root-ca-file once.
func NewFollowing(deps ctrlutil.Deps, file string, every time.Duration) (*Controller, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: root CA bundle: %w", Name, err)
	}
	c, err := New(deps, data)
	if err != nil {
		return nil, err
	}
	c.file, c.followEvery = file, every
	return c, nil
}

// Run runs workers until ctx is done, and follows the bundle's file when there is one.
func (c *Controller) Run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	if c.file != "" && c.followEvery > 0 {
		wg.Go(func() { c.follow(ctx) })
	}
	c.loop.Run(ctx, workers, c.synced...)
	wg.Wait()
}

// follow reads the bundle's file every followEvery until ctx ends.
func (c *Controller) follow(ctx context.Context) {
	tick := c.clock.NewTicker(c.followEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		c.refresh()
	}
}

// refresh takes the file's bundle when it changed and holds a certificate, and queues every
// namespace for it; a file caught unreadable or half-written keeps the bundle published. It
// reports whether the bundle changed.
func (c *Controller) refresh() bool {
	data, err := os.ReadFile(c.file)
	if err != nil || !strings.Contains(string(data), "-----END CERTIFICATE-----") {
		return false
	}
	bundle := string(data)
	if *c.rootCA.Load() == bundle {
		return false
	}
	c.rootCA.Store(&bundle)
	namespaces, err := c.nsLister.List(labels.Everything())
	if err != nil {
		c.log.Warn("list namespaces for a new root CA bundle", "err", err)
		return true
	}
	c.log.Info("root CA bundle changed; republishing", "file", c.file, "namespaces", len(namespaces))
	for _, ns := range namespaces {
		c.loop.Queue.Add(ns.Name)
	}
	return true
}

// Sync makes the namespace's (the key's) kube-root-ca.crt hold the bundle.
func (c *Controller) Sync(ctx context.Context, namespace string) error {
	ns, err := c.nsLister.Get(namespace)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get namespace %s: %w", namespace, err)
	}
	if ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return nil
	}
	cm, err := c.cmLister.ConfigMaps(namespace).Get(ConfigMapName)
	switch {
	case apierrors.IsNotFound(err):
		_, err = c.client.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: namespace, Annotations: map[string]string{descriptionAnnotation: description}},
			Data:       map[string]string{DataKey: *c.rootCA.Load()},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("create %s in %s: %w", ConfigMapName, namespace, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get %s in %s: %w", ConfigMapName, namespace, err)
	}
	rootCA := *c.rootCA.Load()
	if cm.Data[DataKey] == rootCA && len(cm.Data) == 1 && len(cm.BinaryData) == 0 {
		return nil
	}
	next := cm.DeepCopy()
	next.Data, next.BinaryData = map[string]string{DataKey: rootCA}, nil
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	next.Annotations[descriptionAnnotation] = description
	if _, err := c.client.CoreV1().ConfigMaps(namespace).Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update %s in %s: %w", ConfigMapName, namespace, err)
	}
	return nil
}
