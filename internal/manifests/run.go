package manifests

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/leader"
)

const (
	// LeaseName is the kube-system Lease one control plane holds while it runs the directory.
	LeaseName = "skiff-manifests"
	// StatusConfigMap is the kube-system ConfigMap holding each file's FileStatus; Events about
	// the files are recorded on it.
	StatusConfigMap = "skiff-manifests"
)

// Config configures Run.
type Config struct {
	// Dir is the manifests directory.
	Dir       string
	Client    kubernetes.Interface
	Dynamic   dynamic.Interface
	Discovery discovery.DiscoveryInterface
	// Identity is the Lease holder's identity (node name and pid).
	Identity string
	// LeaseDuration, RenewDeadline, RetryPeriod: the Lease's timing (leader's defaults when zero).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Fence, when set, is the fence of this component's client transport: Campaign gives it each
	// term, so the client writes only while the Lease is confirmed held (leader.Fence).
	Fence *leader.Fence
	// Interval is how often the directory is read and the cluster compared with it (default 2 s).
	Interval time.Duration
	Clock    clock.WithTicker
	Logger   *slog.Logger
}

func (c *Config) defaults() {
	if c.Interval == 0 {
		c.Interval = 2 * time.Second
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Run campaigns for the Lease until ctx ends and, while holding it, keeps the cluster in step with
// the directory. Losing the Lease ends the term; Run campaigns again.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	return leader.Campaign(ctx, leader.Config{
		Client: cfg.Client, Namespace: metav1.NamespaceSystem, Name: LeaseName, Identity: cfg.Identity,
		LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
		Policy: leader.CampaignAgain, Logger: cfg.Logger, Fence: cfg.Fence,
	}, func(ctx context.Context) error {
		cfg.Logger.Info("applying the manifests directory", "dir", cfg.Dir, "identity", cfg.Identity)
		newTerm(&cfg).run(ctx)
		return nil
	})
}

// term is one leadership term's state.
type term struct {
	cfg    *Config
	mapper *restmapper.DeferredDiscoveryRESTMapper
	// kinds are the resources listed for labelled objects each pass: those the sweep at the start
	// of the term found any in, and those the files name.
	kinds map[schema.GroupResource]schema.GroupVersionResource
	// status is the status ConfigMap's data as last written.
	status   map[string]string
	cm       *corev1.ConfigMap
	recorder record.EventRecorder
	// dirErr is the last error reading the directory, logged when it changes.
	dirErr string
}

func newTerm(cfg *Config) *term {
	return &term{cfg: cfg, kinds: map[schema.GroupResource]schema.GroupVersionResource{},
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cfg.Discovery))}
}

func (t *term) run(ctx context.Context) {
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: t.cfg.Client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	t.recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: FieldManager})
	ticker := t.cfg.Clock.NewTicker(t.cfg.Interval)
	defer ticker.Stop()
	ready := false
	for {
		if !ready {
			ready = t.start(ctx)
		}
		if ready {
			t.pass(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// start reads the status ConfigMap (creating it) and sweeps every listable resource for labelled
// objects, so that a file removed while no one held the Lease still has its objects pruned.
func (t *term) start(ctx context.Context) bool {
	cms := t.cfg.Client.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	cm, err := cms.Get(ctx, StatusConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm, err = cms.Apply(ctx, applycorev1.ConfigMap(StatusConfigMap, metav1.NamespaceSystem), metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	}
	if err != nil {
		t.cfg.Logger.Warn("manifests status ConfigMap", "configmap", metav1.NamespaceSystem+"/"+StatusConfigMap, "err", err)
		return false
	}
	t.cm, t.status = cm, maps.Clone(cm.Data)
	lists, err := t.cfg.Discovery.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		t.cfg.Logger.Warn("manifests: discovery", "err", err)
		return false
	}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "delete") {
				continue
			}
			gvr := gv.WithResource(r.Name)
			l, err := t.cfg.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: FileLabel, Limit: 1})
			if err == nil && len(l.Items) > 0 {
				t.kinds[gvr.GroupResource()] = gvr
			}
		}
	}
	return true
}

// pass is one comparison of the directory with the cluster, and what it decides.
func (t *term) pass(ctx context.Context) {
	files, err := ReadDir(t.cfg.Dir)
	if err != nil {
		if err.Error() != t.dirErr {
			t.cfg.Logger.Warn("manifests directory unreadable; nothing applied or pruned", "dir", t.cfg.Dir, "err", err)
		}
		t.dirErr = err.Error()
		return
	}
	t.dirErr = ""
	reset := false
	for _, f := range files {
		for _, o := range f.Objects {
			if m, err := t.mapping(o.Obj.GroupVersionKind(), &reset); err == nil {
				t.kinds[m.Resource.GroupResource()] = m.Resource
				normaliseNamespace(o, m)
			}
		}
	}
	plan := Decide(files, t.deployed(ctx))
	out := t.carryOut(ctx, plan, &reset)
	data, events := StatusChanges(t.status, Statuses(files, plan, out), out.Pruned)
	if data != nil {
		cm, err := t.cfg.Client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Apply(ctx,
			applycorev1.ConfigMap(StatusConfigMap, metav1.NamespaceSystem).WithData(data), metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		if err != nil {
			t.cfg.Logger.Warn("write manifests status", "configmap", metav1.NamespaceSystem+"/"+StatusConfigMap, "err", err)
			return // the same changes are found, and reported, next pass
		}
		t.cm, t.status = cm, data
	}
	for _, e := range events {
		level := slog.LevelInfo
		if e.Type == corev1.EventTypeWarning {
			level = slog.LevelWarn
		}
		t.cfg.Logger.Log(ctx, level, "manifests: "+e.Message, "reason", e.Reason, "dir", t.cfg.Dir)
		t.recorder.Event(t.cm, e.Type, e.Reason, e.Message)
	}
}

// mapping resolves a kind, refreshing discovery once a pass when the kind is unknown (a definition
// applied since the last refresh).
func (t *term) mapping(gvk schema.GroupVersionKind, reset *bool) (*meta.RESTMapping, error) {
	m, err := t.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil && meta.IsNoMatchError(err) && !*reset {
		*reset = true
		t.mapper.Reset()
		m, err = t.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("%s is not served (is its CustomResourceDefinition applied?): %w", gvk, err)
	}
	return m, nil
}

// normaliseNamespace gives a namespaced object without a namespace the default one, as kubectl
// apply does, and clears a cluster-scoped object's.
func normaliseNamespace(o Object, m *meta.RESTMapping) {
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if o.Obj.GetNamespace() == "" {
			o.Obj.SetNamespace(metav1.NamespaceDefault)
		}
		return
	}
	o.Obj.SetNamespace("")
}

// deployed lists the labelled objects of every kind in t.kinds. A kind whose list fails is left
// out this pass: its objects are applied again (harmless) and none of them pruned.
func (t *term) deployed(ctx context.Context) []Deployed {
	var out []Deployed
	for gr, gvr := range t.kinds {
		list, err := t.cfg.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: FileLabel})
		if apierrors.IsNotFound(err) {
			delete(t.kinds, gr) // the resource is no longer served (its definition was deleted)
			continue
		}
		if err != nil {
			t.cfg.Logger.Debug("list labelled objects", "resource", gr, "err", err)
			continue
		}
		for _, item := range list.Items {
			gvk := item.GroupVersionKind()
			ann := item.GetAnnotations()
			out = append(out, Deployed{
				Key: Key{Group: gvk.Group, Kind: gvk.Kind, Namespace: item.GetNamespace(), Name: item.GetName()},
				GVK: gvk, FileLabel: item.GetLabels()[FileLabel], File: ann[FileAnnotation], Hash: ann[HashAnnotation],
			})
		}
	}
	return out
}

// carryOut applies and prunes what the plan says; a failure is recorded against its file and
// retried next pass (the object is still not up to date then).
func (t *term) carryOut(ctx context.Context, p Plan, reset *bool) Outcome {
	out := Outcome{Failed: map[string][]error{}}
	for _, o := range p.Apply {
		if err := t.apply(ctx, o, reset); err != nil {
			out.Failed[o.File] = append(out.Failed[o.File], err)
			continue
		}
		t.cfg.Logger.Info("manifests: applied", "file", o.File, "object", o.Key().String())
	}
	for _, d := range p.Prune {
		m, err := t.mapping(d.GVK, reset)
		if err == nil {
			err = t.cfg.Dynamic.Resource(m.Resource).Namespace(d.Key.Namespace).Delete(ctx, d.Key.Name,
				metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			t.cfg.Logger.Warn("manifests: prune", "file", d.File, "object", d.Key.String(), "err", err)
			continue
		}
		out.Pruned = append(out.Pruned, d)
	}
	return out
}

func (t *term) apply(ctx context.Context, o Object, reset *bool) error {
	m, err := t.mapping(o.Obj.GroupVersionKind(), reset)
	if err != nil {
		return err
	}
	t.kinds[m.Resource.GroupResource()] = m.Resource
	normaliseNamespace(o, m)
	obj := o.Obj.DeepCopy()
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[FileLabel] = LabelValue(o.File)
	obj.SetLabels(labels)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[FileAnnotation], ann[HashAnnotation] = o.File, o.Hash
	obj.SetAnnotations(ann)
	// Applying may take fields another manager set (kubectl edit): the directory is the source of
	// truth for what its files say, as k3s's deploy controller.
	_, err = t.cfg.Dynamic.Resource(m.Resource).Namespace(obj.GetNamespace()).Apply(ctx, obj.GetName(), obj,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("apply %s: %w", o.Key(), err)
	}
	return nil
}
