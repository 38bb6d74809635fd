package apiserver

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/skiff-sh/skiff/internal/apiserver/store"
	"github.com/skiff-sh/skiff/internal/request"
	"github.com/skiff-sh/skiff/internal/storage"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// EnsureObject creates obj through the full create path (defaults, strategy, validation) unless an
// object of that name exists. It is how the server seeds its built-in namespaces and classes.
func (s *Server) EnsureObject(ctx context.Context, gr schema.GroupResource, obj runtime.Object) error {
	h := s.handlerForGroupResource(gr)
	if h == nil {
		return fmt.Errorf("ensure %s: resource not served", gr)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if _, err := h.st.Get(ctx, m.GetNamespace(), m.GetName(), storage.GetOptions{}); err == nil {
		return nil
	}
	s.cfg.Scheme.Default(obj)
	ctx = request.WithUser(ctx, &UserInfo{Name: "system:apiserver", Groups: []string{"system:masters"}})
	opts := writeOptions{fieldManager: "skiff-apiserver", fieldValidation: "Strict"}
	_, err = h.st.Create(ctx, obj, store.CreateOptions{Admission: h.createAdmission(opts, true)})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ensure %s %q: %w", gr, m.GetName(), err)
	}
	return nil
}

// Seed is one object EnsureObjects makes sure of.
type Seed struct {
	Resource schema.GroupResource
	Object   runtime.Object
}

// seedConcurrency is how many seeds are written at once. etcd commits concurrent writes together
// (one WAL fsync for a batch of proposals), so a first start's hundreds of default objects take a
// few fsyncs' time instead of one each.
const seedConcurrency = 16

// EnsureObjects is EnsureObject for each seed, several at once: seeds must not depend on each
// other (a namespace and the objects in it go in two calls). The error names every seed that
// failed.
func (s *Server) EnsureObjects(ctx context.Context, seeds []Seed) error {
	var g errgroup.Group
	g.SetLimit(seedConcurrency)
	errs := make([]error, len(seeds))
	for i, seed := range seeds {
		g.Go(func() error {
			errs[i] = s.EnsureObject(ctx, seed.Resource, seed.Object)
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}
