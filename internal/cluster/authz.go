package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/apiserver/local"
	"github.com/skiff-sh/skiff/internal/authz/bootstrappolicy"
	"github.com/skiff-sh/skiff/internal/authz/node"
	"github.com/skiff-sh/skiff/internal/authz/rbac"
)

// Identities of skiff's components, as Kubernetes names them.
const (
	// loopbackUser is the API server's client to itself (its authorization caches, the policy
	// reconciler); like kube-apiserver's loopback identity it is in system:masters.
	loopbackUser = "system:apiserver"
	// kubeletClientUser is the API server's client certificate towards kubelets (logs, exec,
	// port-forward), bound to system:kubelet-api-admin as kubeadm binds it.
	kubeletClientUser = "kube-apiserver-kubelet-client"
)

const podNodeIndex = "spec.nodeName"

// authorization is the API server's authorizer chain and the caches it reads.
type authorization struct {
	client    kubernetes.Interface
	factory   informers.SharedInformerFactory
	authorize apiserver.Authorizer
	// rules lists what RBAC grants a user (SelfSubjectRulesReview).
	rules *rbac.Authorizer
	// inProcess, when set, gives the in-process informers over the API server's watch caches
	// (set once the API server is built; see makeNodeCaches).
	inProcess  func() (*local.Informers, error)
	nodeCaches atomic.Pointer[nodeCaches]
	// local are the in-process informers' sources, once start has them: RBAC's informers list and
	// watch through them when the API server serves the resource in process (see
	// registerRBACInformers).
	local atomic.Pointer[local.Informers]
}

// registerRBACInformers puts RBAC's four informers into the factory before the RBAC authorizer
// takes their listers (the authorizer is built before the API server, whose watch caches the
// in-process informers read, exists). Their list and watch choose the source when they first run,
// after start: the watch cache in process when there is one, else the loopback client. In
// process, the caches sync in milliseconds at start-up instead of 80-130 ms of TLS, JSON and the
// loopback connection, and the node holds one copy of the policy instead of two.
func (a *authorization) registerRBACInformers(client kubernetes.Interface) {
	rc := client.RbacV1().RESTClient()
	for _, t := range []struct {
		resource string
		example  runtime.Object
	}{
		{"clusterroles", &rbacv1.ClusterRole{}}, {"clusterrolebindings", &rbacv1.ClusterRoleBinding{}},
		{"roles", &rbacv1.Role{}}, {"rolebindings", &rbacv1.RoleBinding{}},
	} {
		gr := schema.GroupResource{Group: rbacv1.GroupName, Resource: t.resource}
		remote := cache.NewListWatchFromClient(rc, t.resource, metav1.NamespaceAll, fields.Everything())
		source := func() *cache.ListWatch {
			if lw := a.local.Load().ListWatch(gr); lw != nil {
				return lw
			}
			return remote
		}
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				return source().ListWithContext(ctx, opts)
			},
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				return source().WatchWithContext(ctx, opts)
			},
		}
		a.factory.InformerFor(t.example, func(_ kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			return cache.NewSharedIndexInformer(lw, t.example, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		})
	}
}

// newAuthorization builds the chain system:masters, Node, RBAC over informer caches of a loopback
// client; the caches start once the server serves (startAuthorization).
func newAuthorization(cfg *Config, now time.Time) (*authorization, error) {
	restCfg, err := componentRESTConfig(cfg, loopbackUser, []string{bootstrappolicy.SystemPrivilegedGroup}, now)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("loopback client: %w", err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	a := &authorization{client: client, factory: factory}
	a.registerRBACInformers(client)
	r := factory.Rbac().V1()
	crbs, rbs := r.ClusterRoleBindings().Informer(), r.RoleBindings().Informer()
	for _, inf := range []cache.SharedIndexInformer{crbs, rbs} {
		if err := inf.AddIndexers(rbac.SubjectIndexers()); err != nil {
			return nil, fmt.Errorf("rbac subject index: %w", err)
		}
	}
	rbacAuthz := rbac.New(rbac.Listers{
		Roles: r.Roles().Lister(), RoleBindings: r.RoleBindings().Lister(),
		ClusterRoles: r.ClusterRoles().Lister(), ClusterRoleBindings: r.ClusterRoleBindings().Lister(),
		ClusterRoleBindingsBySubject: crbs.GetIndexer(), RoleBindingsBySubject: rbs.GetIndexer(),
	})
	var nodeRules []rbacv1.PolicyRule
	for _, role := range bootstrappolicy.ClusterRoles() {
		if role.Name == "system:node" {
			nodeRules = role.Rules
		}
	}
	a.rules = rbacAuthz
	nodeAuthz := node.New(a.podsOnNode, lazyPVCLister{a}, a.volumeNamed, nodeRules)
	a.authorize = apiserver.UnionAuthorizer{
		apiserver.PrivilegedGroups{bootstrappolicy.SystemPrivilegedGroup}, nodeAuthz, rbacAuthz,
	}
	return a, nil
}

// nodeCaches are the pod, PVC and PV caches the Node authorizer reads. They are made in start, after
// the API server built its watch caches, so that in a controlplane process they are the in-process
// informers over those caches (inProcess) rather than a second decoded copy of every pod watched
// over the loopback client; until then the Node authorizer sees no pods, as with an unsynced cache.
type nodeCaches struct {
	pods cache.Indexer
	pvcs corelisters.PersistentVolumeClaimLister
	pvs  corelisters.PersistentVolumeLister
}

// volumeNamed reads a PersistentVolume from the Node authorizer's cache (none before start).
func (a *authorization) volumeNamed(name string) (*corev1.PersistentVolume, error) {
	c := a.nodeCaches.Load()
	if c == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumes"}, name)
	}
	return c.pvs.Get(name)
}

func (a *authorization) podsOnNode(name string) ([]*corev1.Pod, error) {
	c := a.nodeCaches.Load()
	if c == nil {
		return nil, nil
	}
	objs, err := c.pods.ByIndex(podNodeIndex, name)
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// makeNodeCaches registers the in-process informers (when any) and creates the Node authorizer's
// pod informer (indexed by node) and PVC and PV listers on the factory; called once, before it starts.
func (a *authorization) makeNodeCaches() error {
	if a.inProcess != nil {
		in, err := a.inProcess()
		if err != nil {
			return fmt.Errorf("authorization: in-process informers: %w", err)
		}
		in.Only(nodeAuthorizerResources()...).Register(a.factory)
		a.local.Store(in.Only(rbacResources()...))
	}
	pods := a.factory.Core().V1().Pods().Informer()
	if err := pods.AddIndexers(cache.Indexers{podNodeIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return fmt.Errorf("pod node index: %w", err)
	}
	core := a.factory.Core().V1()
	a.nodeCaches.Store(&nodeCaches{pods: pods.GetIndexer(), pvcs: core.PersistentVolumeClaims().Lister(), pvs: core.PersistentVolumes().Lister()})
	return nil
}

// lazyPVCLister reads the authorization's PVC lister once start made it; before, it lists nothing.
type lazyPVCLister struct{ a *authorization }

var _ corelisters.PersistentVolumeClaimLister = lazyPVCLister{}

func (l lazyPVCLister) List(selector labels.Selector) ([]*corev1.PersistentVolumeClaim, error) {
	if c := l.a.nodeCaches.Load(); c != nil {
		return c.pvcs.List(selector)
	}
	return nil, nil
}

func (l lazyPVCLister) PersistentVolumeClaims(namespace string) corelisters.PersistentVolumeClaimNamespaceLister {
	if c := l.a.nodeCaches.Load(); c != nil {
		return c.pvcs.PersistentVolumeClaims(namespace)
	}
	return emptyPVCNamespaceLister{namespace: namespace}
}

type emptyPVCNamespaceLister struct{ namespace string }

func (e emptyPVCNamespaceLister) List(labels.Selector) ([]*corev1.PersistentVolumeClaim, error) {
	return nil, nil
}

func (e emptyPVCNamespaceLister) Get(name string) (*corev1.PersistentVolumeClaim, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumeclaims"}, name)
}

// start runs the caches and waits until they hold the cluster's state, then reconciles the default
// policy (the create-only pass ran before serving).
func (a *authorization) start(ctx context.Context, log *slog.Logger) error {
	if err := a.makeNodeCaches(); err != nil {
		return err
	}
	a.factory.Start(ctx.Done())
	for typ, ok := range a.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("authorization cache for %v did not sync", typ)
		}
	}
	r := a.factory.Rbac().V1()
	return reconcilePolicy(ctx, a.client, policyCache{
		clusterRoles: r.ClusterRoles().Lister(), clusterRoleBindings: r.ClusterRoleBindings().Lister(),
		roles: r.Roles().Lister(), roleBindings: r.RoleBindings().Lister(),
	}, log)
}

// defaultClusterRoleBindings are upstream's bindings plus skiff's own: the controller manager's
// single identity bound to every controller role, and the API server's kubelet client.
func defaultClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	out := append(bootstrappolicy.ClusterRoleBindings(), bootstrappolicy.ControllerRoleBindings()...)
	out = append(out, bootstrappolicy.ControllerManagerBindings()...)
	out = append(out, bootstrappolicy.JoinClusterRoleBindings()...)
	out = append(out, bootstrappolicy.CloudClusterRoleBindings()...)
	out = append(out, bootstrappolicy.MetricsClusterRoleBindings()...)
	return append(out, rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "skiff:kube-apiserver-kubelet-client"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: kubeletClientUser}},
	})
}

// defaultNamespaceRoles are upstream's plus the control-plane join's key reader.
func defaultNamespaceRoles() []rbacv1.Role {
	return append(bootstrappolicy.NamespaceRoles(), bootstrappolicy.JoinRoles()...)
}

// defaultNamespaceRoleBindings are upstream's plus the token cleaner's for skiff's controller manager.
func defaultNamespaceRoleBindings() []rbacv1.RoleBinding {
	return append(bootstrappolicy.NamespaceRoleBindings(), bootstrappolicy.JoinRoleBindings()...)
}

func defaultClusterRoles() []rbacv1.ClusterRole {
	return slices.Concat(bootstrappolicy.ClusterRoles(), bootstrappolicy.ControllerRoles(), bootstrappolicy.JoinClusterRoles(), bootstrappolicy.CloudClusterRoles(),
		bootstrappolicy.MetricsClusterRoles())
}

// ensurePolicy creates the default policy objects that are missing, before the server serves, so
// components find their rights at their first request.
func ensurePolicy(ctx context.Context, srv *apiserver.Server) error {
	g := rbacv1.GroupName
	var seeds []apiserver.Seed
	for _, r := range defaultClusterRoles() {
		seeds = append(seeds, apiserver.Seed{Resource: schema.GroupResource{Group: g, Resource: "clusterroles"}, Object: &r})
	}
	for _, b := range defaultClusterRoleBindings() {
		seeds = append(seeds, apiserver.Seed{Resource: schema.GroupResource{Group: g, Resource: "clusterrolebindings"}, Object: &b})
	}
	for _, r := range defaultNamespaceRoles() {
		seeds = append(seeds, apiserver.Seed{Resource: schema.GroupResource{Group: g, Resource: "roles"}, Object: &r})
	}
	for _, b := range defaultNamespaceRoleBindings() {
		seeds = append(seeds, apiserver.Seed{Resource: schema.GroupResource{Group: g, Resource: "rolebindings"}, Object: &b})
	}
	return srv.EnsureObjects(ctx, seeds)
}

// policyCache is what reconcilePolicy reads the default objects from: the authorization's RBAC
// listers, synced before it runs.
type policyCache struct {
	clusterRoles        rbaclisters.ClusterRoleLister
	clusterRoleBindings rbaclisters.ClusterRoleBindingLister
	roles               rbaclisters.RoleLister
	roleBindings        rbaclisters.RoleBindingLister
}

// reconcilePolicy adds missing rules and subjects to existing default objects (unless annotated
// autoupdate=false), as kube-apiserver's RBAC post-start hook does after an upgrade. It reads them
// from the synced caches: a start where nothing changed makes no request (one GET per object, about
// 200 in a row, took 150-250 ms of every restart before the node's components could start).
func reconcilePolicy(ctx context.Context, client kubernetes.Interface, cached policyCache, log *slog.Logger) error {
	crs := client.RbacV1().ClusterRoles()
	for _, desired := range defaultClusterRoles() {
		err := reconcileDefault(
			func() (*rbacv1.ClusterRole, error) { return cached.clusterRoles.Get(desired.Name) },
			func() (*rbacv1.ClusterRole, error) { return crs.Get(ctx, desired.Name, metav1.GetOptions{}) },
			func() error { _, err := crs.Create(ctx, &desired, metav1.CreateOptions{}); return err },
			func(existing *rbacv1.ClusterRole) error {
				updated, changed := bootstrappolicy.ReconcileClusterRole(existing, &desired)
				if !changed {
					return nil
				}
				log.Info("reconciling default clusterrole", "name", desired.Name)
				_, err := crs.Update(ctx, updated, metav1.UpdateOptions{})
				return err
			})
		if err != nil {
			return fmt.Errorf("reconcile clusterrole %s: %w", desired.Name, err)
		}
	}
	crbs := client.RbacV1().ClusterRoleBindings()
	for _, desired := range defaultClusterRoleBindings() {
		err := reconcileDefault(
			func() (*rbacv1.ClusterRoleBinding, error) { return cached.clusterRoleBindings.Get(desired.Name) },
			func() (*rbacv1.ClusterRoleBinding, error) { return crbs.Get(ctx, desired.Name, metav1.GetOptions{}) },
			func() error { _, err := crbs.Create(ctx, &desired, metav1.CreateOptions{}); return err },
			func(existing *rbacv1.ClusterRoleBinding) error {
				if existing.Annotations[bootstrappolicy.AutoUpdateAnnotation] == "false" {
					return nil
				}
				subjects, changed := bootstrappolicy.ReconcileSubjects(existing.Subjects, desired.Subjects)
				if !changed {
					return nil
				}
				log.Info("reconciling default clusterrolebinding", "name", desired.Name)
				existing = existing.DeepCopy()
				existing.Subjects = subjects
				_, err := crbs.Update(ctx, existing, metav1.UpdateOptions{})
				return err
			})
		if err != nil {
			return fmt.Errorf("reconcile clusterrolebinding %s: %w", desired.Name, err)
		}
	}
	for _, desired := range defaultNamespaceRoles() {
		roles := client.RbacV1().Roles(desired.Namespace)
		err := reconcileDefault(
			func() (*rbacv1.Role, error) { return cached.roles.Roles(desired.Namespace).Get(desired.Name) },
			func() (*rbacv1.Role, error) { return roles.Get(ctx, desired.Name, metav1.GetOptions{}) },
			func() error { _, err := roles.Create(ctx, &desired, metav1.CreateOptions{}); return err },
			func(existing *rbacv1.Role) error {
				updated, changed := bootstrappolicy.ReconcileRole(existing, &desired)
				if !changed {
					return nil
				}
				_, err := roles.Update(ctx, updated, metav1.UpdateOptions{})
				return err
			})
		if err != nil {
			return fmt.Errorf("reconcile role %s/%s: %w", desired.Namespace, desired.Name, err)
		}
	}
	for _, desired := range defaultNamespaceRoleBindings() {
		rbs := client.RbacV1().RoleBindings(desired.Namespace)
		err := reconcileDefault(
			func() (*rbacv1.RoleBinding, error) {
				return cached.roleBindings.RoleBindings(desired.Namespace).Get(desired.Name)
			},
			func() (*rbacv1.RoleBinding, error) { return rbs.Get(ctx, desired.Name, metav1.GetOptions{}) },
			func() error { _, err := rbs.Create(ctx, &desired, metav1.CreateOptions{}); return err },
			func(existing *rbacv1.RoleBinding) error {
				subjects, changed := bootstrappolicy.ReconcileSubjects(existing.Subjects, desired.Subjects)
				if !changed {
					return nil
				}
				existing = existing.DeepCopy()
				existing.Subjects = subjects
				_, err := rbs.Update(ctx, existing, metav1.UpdateOptions{})
				return err
			})
		if err != nil {
			return fmt.Errorf("reconcile rolebinding %s/%s: %w", desired.Namespace, desired.Name, err)
		}
	}
	return nil
}

// reconcileDefault brings one default policy object up to date: read from the cache, created when
// it is missing (another API server creating it first is fine), updated by update when it is there.
// A conflict (the cache behind a write of another API server or a user) or a create that lost the
// race reads the object from the API server and tries again.
func reconcileDefault[T any](cached, fresh func() (T, error), create func() error, update func(T) error) error {
	existing, err := cached()
	for attempt := 0; ; attempt++ {
		switch {
		case apierrors.IsNotFound(err):
			err = create()
		case err == nil:
			err = update(existing)
		}
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if attempt == policyReconcileAttempts-1 {
			return err
		}
		existing, err = fresh()
	}
}

// policyReconcileAttempts bounds reconcileDefault's reads again after a conflict.
const policyReconcileAttempts = 5

// labelNodeRoles gives this node's Node object its node-role.kubernetes.io/<role> labels once the
// kubelet has registered it. A kubelet may not set them itself (NodeRestriction: a node must not
// promote itself to control plane), so the control plane does, as kubeadm does at init.
func (a *authorization) labelNodeRoles(ctx context.Context, nodeName string, roles []string, log *slog.Logger) {
	labelNodeRoles(ctx, a.client, nodeName, roles, log)
}

// labelNodeRoles patches the role labels onto nodeName's Node with client (an admin's), retrying
// until the kubelet has registered the Node or ctx ends.
func labelNodeRoles(ctx context.Context, client kubernetes.Interface, nodeName string, roles []string, log *slog.Logger) {
	labels := map[string]any{}
	for _, r := range roles {
		labels["node-role.kubernetes.io/"+r] = ""
	}
	patchNodeLabels(ctx, client, nodeName, labels, log)
}

// patchNodeLabels sets labels on nodeName's Node (a nil value removes the label) with client,
// retrying until the kubelet has registered the Node or ctx ends.
func patchNodeLabels(ctx context.Context, client kubernetes.Interface, nodeName string, labels map[string]any, log *slog.Logger) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		log.Error("node role labels", "node", nodeName, "err", err)
		return
	}
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Nodes().Patch(ctx, nodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil // not registered yet
		}
		if err != nil {
			log.Debug("label node roles", "node", nodeName, "err", err)
			return false, nil
		}
		return true, nil
	})
	if err != nil && ctx.Err() == nil {
		log.Error("label node roles", "node", nodeName, "err", err)
	}
}
