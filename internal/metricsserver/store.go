package metricsserver

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/computed"
)

// KeyPrefix is the key prefix the API server's generic store uses for a metrics.k8s.io resource
// (/registry/<group>/<plural>/); the stores parse namespaces and names out of keys after it.
func KeyPrefix(plural string) string {
	return "/registry/" + metricsv1beta1.GroupName + "/" + plural + "/"
}

// readOnlyStore answers get and list from the server's points, per namespace for pods; writes
// and watches fail as computed.Store's do (the resources serve only get and list, so these are a
// second line behind the verb check).
type readOnlyStore struct {
	*computed.Store
	prefix string
	// objects lists the current objects of a namespace ("" for all; always "" for nodes).
	objects func(namespace string) []runtime.Object
	// object finds one.
	object func(namespace, name string) (runtime.Object, bool)
	// namespaced is true for pods.
	namespaced bool
}

var _ storage.Interface = &readOnlyStore{}

// NodeStorage is the storage of metrics.k8s.io/v1beta1 nodes.
func (s *Server) NodeStorage() storage.Interface {
	return &readOnlyStore{Store: readOnly(), prefix: KeyPrefix("nodes"), objects: func(string) []runtime.Object { return s.nodeObjects("") }, object: func(_, name string) (runtime.Object, bool) {
		objs := s.nodeObjects(name)
		if len(objs) == 0 {
			return nil, false
		}
		return objs[0], true
	}}
}

// PodStorage is the storage of metrics.k8s.io/v1beta1 pods.
func (s *Server) PodStorage() storage.Interface {
	return &readOnlyStore{Store: readOnly(), prefix: KeyPrefix("pods"), namespaced: true, objects: func(ns string) []runtime.Object { return s.podObjects(ns, "") },
		object: func(ns, name string) (runtime.Object, bool) {
			objs := s.podObjects(ns, name)
			if len(objs) == 0 {
				return nil, false
			}
			return objs[0], true
		}}
}

// readOnly is the computed store whose writes and watches readOnlyStore keeps; its own reads are
// never used.
func readOnly() *computed.Store {
	return computed.New(func(context.Context) ([]runtime.Object, error) { return nil, nil }, nil)
}

// split parses a key or collection prefix into a namespace and a name (either may be empty).
func (st *readOnlyStore) split(key string) (string, string, error) {
	rest, ok := strings.CutPrefix(key, st.prefix)
	if !ok {
		return "", "", fmt.Errorf("key %q is not under %s", key, st.prefix)
	}
	if !st.namespaced {
		return "", strings.TrimSuffix(rest, "/"), nil
	}
	ns, name, _ := strings.Cut(rest, "/")
	return ns, name, nil
}

func (st *readOnlyStore) Get(_ context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	ns, name, err := st.split(key)
	if err != nil {
		return err
	}
	obj, ok := st.object(ns, name)
	if !ok {
		if opts.IgnoreNotFound {
			return nil
		}
		return storage.NewError(storage.ErrCodeNotFound, key, "", nil)
	}
	switch dst := out.(type) {
	case *metricsv1beta1.NodeMetrics:
		*dst = *obj.(*metricsv1beta1.NodeMetrics)
	case *metricsv1beta1.PodMetrics:
		*dst = *obj.(*metricsv1beta1.PodMetrics)
	default:
		return fmt.Errorf("get %s: unexpected object %T", key, out)
	}
	return nil
}

func (st *readOnlyStore) List(_ context.Context, prefix string, opts storage.ListOptions, listObj runtime.Object) error {
	ns, _, err := st.split(prefix)
	if err != nil {
		return err
	}
	var items []runtime.Object
	for _, obj := range st.objects(ns) {
		ok, err := opts.Predicate.Matches(obj)
		if err != nil {
			return fmt.Errorf("list %s: evaluate selectors: %w", prefix, err)
		}
		if ok {
			items = append(items, obj)
		}
	}
	if err := meta.SetList(listObj, items); err != nil {
		return fmt.Errorf("list %s: %w", prefix, err)
	}
	return nil
}

func (st *readOnlyStore) Count(_ context.Context, prefix string) (int64, error) {
	ns, _, err := st.split(prefix)
	if err != nil {
		return 0, err
	}
	return int64(len(st.objects(ns))), nil
}
