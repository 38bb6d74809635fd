package local

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/apiserver/store"
	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/storage"
)

// Source is what the ListerWatcher reads: the watch cache's shared watches (*watchcache.Cache).
type Source interface {
	WatchShared(ctx context.Context, prefix string, opts storage.ListOptions) (watch.Interface, error)
}

// ListerWatcher lists and watches one resource from the API server's watch cache.
type ListerWatcher struct {
	res        *registry.Resource
	source     Source
	attrs      storage.AttrFunc
	prefix     string
	selectable map[string]bool
}

var _ cache.ListerWatcherWithContext = (*ListerWatcher)(nil)

// New serves res (all namespaces) from source.
func New(res *registry.Resource, source Source) (*ListerWatcher, error) {
	if source == nil {
		return nil, fmt.Errorf("local list-watch %s: no source", res.GroupResource())
	}
	st, err := store.New(store.Config{Resource: res})
	if err != nil {
		return nil, fmt.Errorf("local list-watch %s: %w", res.GroupResource(), err)
	}
	// The selectable fields are those Attrs gives an empty object, as the API server accepts them.
	_, set, err := st.Attrs(res.New())
	if err != nil {
		return nil, fmt.Errorf("local list-watch %s: %w", res.GroupResource(), err)
	}
	selectable := map[string]bool{}
	for k := range set {
		selectable[k] = true
	}
	return &ListerWatcher{res: res, source: source, attrs: st.Attrs, prefix: store.KeyPrefix(res), selectable: selectable}, nil
}

// options turns client-go's options into the watch cache's, refusing what the API server refuses
// with the same Status.
func (lw *ListerWatcher) options(opts metav1.ListOptions) (storage.ListOptions, error) {
	pred := storage.Predicate{Attrs: lw.attrs}
	if opts.LabelSelector != "" {
		sel, err := labels.Parse(opts.LabelSelector)
		if err != nil {
			return storage.ListOptions{}, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
		}
		pred.Label = sel
	}
	if opts.FieldSelector != "" {
		sel, err := fields.ParseSelector(opts.FieldSelector)
		if err != nil {
			return storage.ListOptions{}, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
		}
		for _, req := range sel.Requirements() {
			if !lw.selectable[req.Field] {
				return storage.ListOptions{}, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
			}
		}
		pred.Field = sel
	}
	if opts.Continue != "" {
		return storage.ListOptions{}, apierrors.NewBadRequest("continue is not served in process: lists are whole")
	}
	return storage.ListOptions{
		ResourceVersion:      opts.ResourceVersion,
		ResourceVersionMatch: string(opts.ResourceVersionMatch),
		Predicate:            pred,
		Recursive:            true,
		ProgressNotify:       opts.AllowWatchBookmarks,
		SendInitialEvents:    opts.SendInitialEvents,
	}, nil
}

// WatchWithContext implements cache.WatcherWithContext. client-go's reflector streams its initial
// state this way (sendInitialEvents): each object is the cache's own.
func (lw *ListerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	sopts, err := lw.options(opts)
	if err != nil {
		return nil, err
	}
	if sopts.SendInitialEvents != nil && sopts.ResourceVersionMatch != string(metav1.ResourceVersionMatchNotOlderThan) {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("sendInitialEvents requires setting resourceVersionMatch to %s", metav1.ResourceVersionMatchNotOlderThan))
	}
	cancel := context.CancelFunc(func() {})
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*opts.TimeoutSeconds)*time.Second)
	}
	w, err := lw.source.WatchShared(ctx, lw.prefix, sopts)
	if err != nil {
		cancel()
		return nil, store.ToAPIError(err, lw.res.GroupResource(), "")
	}
	return &stopWatch{Interface: w, cancel: cancel}, nil
}

// ListWithContext implements cache.ListerWithContext from the same shared state: the items of the
// typed list are shallow copies of the cached objects (their maps, slices and strings are shared),
// because typed lists hold values. Informers use it only when streaming is turned off.
func (lw *ListerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact {
		return nil, apierrors.NewBadRequest("resourceVersionMatch=Exact is not served in process")
	}
	wopts := opts
	wopts.Watch, wopts.Limit = false, 0
	wopts.SendInitialEvents = ptrTo(true)
	wopts.AllowWatchBookmarks = true
	wopts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	if wopts.ResourceVersion == "0" {
		wopts.ResourceVersion = ""
	}
	w, err := lw.WatchWithContext(ctx, wopts)
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	objs, rev, err := collectInitial(ctx, w)
	if err != nil {
		return nil, err
	}
	list := lw.res.NewList()
	if err := meta.SetList(list, objs); err != nil {
		return nil, fmt.Errorf("list %s: %w", lw.res.GroupResource(), err)
	}
	accessor, err := meta.ListAccessor(list)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", lw.res.GroupResource(), err)
	}
	accessor.SetResourceVersion(rev)
	return list, nil
}

// collectInitial reads a watch's initial events up to the bookmark that ends them.
func collectInitial(ctx context.Context, w watch.Interface) ([]runtime.Object, string, error) {
	var objs []runtime.Object
	for {
		select {
		case <-ctx.Done():
			return nil, "", ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, "", apierrors.NewTimeoutError("the watch ended before its initial events", 1)
			}
			switch ev.Type {
			case watch.Error:
				return nil, "", apierrors.FromObject(ev.Object)
			case watch.Bookmark:
				accessor, err := meta.Accessor(ev.Object)
				if err != nil {
					return nil, "", fmt.Errorf("bookmark: %w", err)
				}
				if accessor.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
					return objs, accessor.GetResourceVersion(), nil
				}
			case watch.Added:
				objs = append(objs, ev.Object)
			default:
				return nil, "", fmt.Errorf("unexpected %s event among the initial ones", ev.Type)
			}
		}
	}
}

// stopWatch ends the watch's timeout context with it.
type stopWatch struct {
	watch.Interface
	cancel context.CancelFunc
}

func (w *stopWatch) Stop() {
	w.Interface.Stop()
	w.cancel()
}

func ptrTo[T any](v T) *T { return &v }
