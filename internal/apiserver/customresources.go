package apiserver

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
	"github.com/skiff-sh/skiff/internal/apiserver/store"
	"github.com/skiff-sh/skiff/internal/registry/apiextensions"
	"github.com/skiff-sh/skiff/internal/registry/customresource"
	"github.com/skiff-sh/skiff/internal/storage"
)

var crdResource = schema.GroupResource{Group: crdv1.GroupName, Resource: "customresourcedefinitions"}

// retryAfter is how long a definition whose reconcile failed (or whose objects are still being
// deleted) waits before it is looked at again.
const retryAfter = time.Second

// RemoveResource stops serving gvr; its storage's watches end.
func (s *Server) RemoveResource(gvr schema.GroupVersionResource) {
	s.mu.Lock()
	h := s.handlers[gvr]
	delete(s.handlers, gvr)
	if h != nil && s.byKind[h.res.GroupVersionKind()] == h {
		delete(s.byKind, h.res.GroupVersionKind())
	}
	s.mu.Unlock()
	if h != nil {
		stopStorage(h)
	}
}

// stopStorage ends the watch cache (and so the watches) of a handler no longer served.
func stopStorage(h *resourceHandler) {
	if stopper, ok := h.st.Storage().(interface{ Stop() }); ok {
		stopper.Stop()
	}
}

// RunCustomResources serves the resources of every established CustomResourceDefinition, live,
// until ctx ends: it watches the definitions, sets their status (NamesAccepted, Established,
// acceptedNames), adds and removes the served resources, and on delete removes every object of a
// definition before its cleanup finalizer. Every API server runs it, so each serves the same set.
func (s *Server) RunCustomResources(ctx context.Context) error {
	c, err := s.customResourceController()
	if err != nil {
		return err
	}
	go c.watchLoop(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case name := <-c.queue:
			if err := c.reconcile(ctx, name); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				s.log.Debug("reconcile customresourcedefinition", "name", name, "err", err)
				time.AfterFunc(retryAfter, func() { c.enqueue(ctx, name) })
			}
		}
	}
}

// SyncCustomResources serves the resources of the definitions that exist now, before it returns:
// the assembly calls it before it accepts requests, so that a restarted API server answers for
// every custom resource from its first request on (kube-apiserver's readiness waits for the same).
// RunCustomResources then keeps them up to date.
func (s *Server) SyncCustomResources(ctx context.Context) error {
	c, err := s.customResourceController()
	if err != nil {
		return err
	}
	list, err := c.h.st.List(ctx, "", storage.ListOptions{Recursive: true})
	if err != nil {
		return fmt.Errorf("list customresourcedefinitions: %w", err)
	}
	// One LIST serves every definition's checks (each reconcile of the controller lists them all
	// again, and a copy of a large definition costs milliseconds: with the Gateway API's that was
	// most of a control plane's restart), and discovery and OpenAPI hear of the served set once.
	all := list.(*crdv1.CustomResourceDefinitionList).Items
	c.batching = true
	defer func() {
		c.batching = false
		if c.pending {
			c.pending = false
			s.resourcesChanged()
		}
	}()
	for i := range all {
		if err := c.reconcileDefinition(ctx, &all[i], all); err != nil {
			// The controller tries again once it runs.
			s.log.Warn("serve customresourcedefinition", "name", all[i].Name, "err", err)
		}
	}
	return nil
}

// customResourceController is the server's one controller of definitions, made on first use. Sync
// and Run use it one after the other, never at once.
func (s *Server) customResourceController() (*crdController, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.crds != nil {
		return s.crds, nil
	}
	var h *resourceHandler
	for gvr, handler := range s.handlers {
		if gvr.GroupResource() == crdResource {
			h = handler
		}
	}
	if h == nil {
		return nil, fmt.Errorf("custom resources: %s not served", crdResource)
	}
	s.crds = &crdController{s: s, h: h, served: map[string]*servedDefinition{}, queue: make(chan string, 1024)}
	return s.crds, nil
}

type crdController struct {
	s      *Server
	h      *resourceHandler
	served map[string]*servedDefinition // owned by the RunCustomResources goroutine
	queue  chan string
	// batching holds back the served set's change notices while SyncCustomResources runs;
	// pending says one is owed.
	batching, pending bool
}

// servedDefinition is what one definition serves now, and from which generation it was built.
type servedDefinition struct {
	generation int64
	resources  []schema.GroupVersionResource
}

func (c *crdController) enqueue(ctx context.Context, name string) {
	select {
	case c.queue <- name:
	case <-ctx.Done():
	}
}

// watchLoop feeds every change of a definition (and each existing one at start) to the queue.
func (c *crdController) watchLoop(ctx context.Context) {
	for ctx.Err() == nil {
		w, err := c.h.st.Watch(ctx, "", "", storage.ListOptions{Recursive: true})
		if err != nil {
			c.s.log.Warn("watch customresourcedefinitions", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(retryAfter):
			}
			continue
		}
		c.drain(ctx, w)
		w.Stop()
	}
}

func (c *crdController) drain(ctx context.Context, w watch.Interface) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if crd, isCRD := ev.Object.(*crdv1.CustomResourceDefinition); isCRD {
				c.enqueue(ctx, crd.Name)
			}
		}
	}
}

func (c *crdController) reconcile(ctx context.Context, name string) error {
	obj, err := c.h.st.Get(ctx, "", name, storage.GetOptions{})
	if apierrors.IsNotFound(err) {
		c.unserve(name)
		return nil
	}
	if err != nil {
		return err
	}
	list, err := c.h.st.List(ctx, "", storage.ListOptions{Recursive: true})
	if err != nil {
		return fmt.Errorf("list customresourcedefinitions: %w", err)
	}
	return c.reconcileDefinition(ctx, obj.(*crdv1.CustomResourceDefinition), list.(*crdv1.CustomResourceDefinitionList).Items)
}

// reconcileDefinition serves crd, or finalizes it, and sets its status; all is every definition,
// for the names check.
func (c *crdController) reconcileDefinition(ctx context.Context, crd *crdv1.CustomResourceDefinition, all []crdv1.CustomResourceDefinition) error {
	if crd.DeletionTimestamp != nil {
		return c.finalize(ctx, crd)
	}
	accepted, conflict := c.namesAccepted(crd, all)
	if conflict == "" {
		// Serving (discovery and OpenAPI included) comes first: a client that saw Established
		// finds the resource, as with kube-apiserver's establishing controller.
		if err := c.serve(crd); err != nil {
			return err
		}
	}
	return c.updateStatus(ctx, crd, accepted, conflict)
}

// namesAccepted checks the definition's names against the other definitions of its group and the
// built-in resources, as upstream's naming controller does.
func (c *crdController) namesAccepted(crd *crdv1.CustomResourceDefinition, all []crdv1.CustomResourceDefinition) (crdv1.CustomResourceDefinitionNames, string) {
	names := crd.Spec.Names
	if c.served[crd.Name] == nil {
		for _, res := range c.s.Resources() {
			if res.GroupVersion.Group != crd.Spec.Group || res.Objects != nil {
				continue
			}
			if res.Plural == names.Plural {
				return names, fmt.Sprintf("%q is already in use", names.Plural)
			}
		}
	}
	for _, other := range all {
		if other.Name == crd.Name || other.Spec.Group != crd.Spec.Group {
			continue
		}
		// Only names the other definition holds already count; the older one keeps them.
		if other.Status.AcceptedNames.Kind == names.Kind {
			return names, fmt.Sprintf("%q is already in use", names.Kind)
		}
		if other.Status.AcceptedNames.ListKind != "" && other.Status.AcceptedNames.ListKind == names.ListKind {
			return names, fmt.Sprintf("%q is already in use", names.ListKind)
		}
		for _, short := range names.ShortNames {
			if slices.Contains(other.Status.AcceptedNames.ShortNames, short) {
				return names, fmt.Sprintf("%q is already in use", short)
			}
		}
	}
	return names, ""
}

// updateStatus writes the definition's names and conditions when they changed; crd's status is
// then what was written.
func (c *crdController) updateStatus(ctx context.Context, crd *crdv1.CustomResourceDefinition, accepted crdv1.CustomResourceDefinitionNames, conflict string) error {
	now := c.s.clock.Now()
	next := crd.DeepCopy()
	if conflict == "" {
		next.Status.AcceptedNames = accepted
		apiextensions.SetCondition(&next.Status, crdv1.CustomResourceDefinitionCondition{
			Type: crdv1.NamesAccepted, Status: crdv1.ConditionTrue, Reason: "NoConflicts", Message: "no conflicts found"}, now)
		apiextensions.SetCondition(&next.Status, crdv1.CustomResourceDefinitionCondition{
			Type: crdv1.Established, Status: crdv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"}, now)
	} else {
		apiextensions.SetCondition(&next.Status, crdv1.CustomResourceDefinitionCondition{
			Type: crdv1.NamesAccepted, Status: crdv1.ConditionFalse, Reason: "NameConflict", Message: conflict}, now)
		if cond := apiextensions.Condition(&next.Status, crdv1.Established); cond == nil || cond.Status != crdv1.ConditionTrue {
			apiextensions.SetCondition(&next.Status, crdv1.CustomResourceDefinitionCondition{
				Type: crdv1.Established, Status: crdv1.ConditionFalse, Reason: "NotAccepted", Message: "not all names are accepted"}, now)
		}
	}
	if equalStatus(&crd.Status, &next.Status) {
		return nil
	}
	err := c.h.st.Modify(ctx, "", crd.Name, &metav1.Preconditions{UID: &crd.UID}, false, func(current runtime.Object) (runtime.Object, error) {
		cur := current.(*crdv1.CustomResourceDefinition).DeepCopy()
		cur.Status.AcceptedNames = next.Status.AcceptedNames
		cur.Status.Conditions = next.Status.Conditions
		return cur, nil
	})
	if err == nil {
		// crd now says what is stored: SyncCustomResources checks the next definitions' names
		// against the names this one holds.
		crd.Status.AcceptedNames, crd.Status.Conditions = next.Status.AcceptedNames, next.Status.Conditions
	}
	return err
}

func equalStatus(a, b *crdv1.CustomResourceDefinitionStatus) bool {
	if !slices.Equal(a.AcceptedNames.ShortNames, b.AcceptedNames.ShortNames) || !slices.Equal(a.AcceptedNames.Categories, b.AcceptedNames.Categories) {
		return false
	}
	an, bn := a.AcceptedNames, b.AcceptedNames
	if an.Plural != bn.Plural || an.Singular != bn.Singular || an.Kind != bn.Kind || an.ListKind != bn.ListKind {
		return false
	}
	return slices.EqualFunc(a.Conditions, b.Conditions, func(x, y crdv1.CustomResourceDefinitionCondition) bool {
		return x.Type == y.Type && x.Status == y.Status && x.Reason == y.Reason && x.Message == y.Message && x.LastTransitionTime.Equal(&y.LastTransitionTime)
	})
}

// serve (re)builds the definition's resources when its spec changed since they were built.
func (c *crdController) serve(crd *crdv1.CustomResourceDefinition) error {
	if cur := c.served[crd.Name]; cur != nil && cur.generation == crd.Generation {
		return nil
	}
	convert, err := c.s.conversionWebhook(crd)
	if err != nil {
		return err
	}
	resources, err := customresource.Resources(crd, customresource.Options{TypeConverter: c.s.cfg.CustomResourceTypeConverter, Convert: convert})
	if err != nil {
		return err
	}
	next := &servedDefinition{generation: crd.Generation}
	for _, res := range resources {
		if err := c.s.AddResource(res); err != nil {
			return err
		}
		next.resources = append(next.resources, res.GroupVersionResource())
	}
	if cur := c.served[crd.Name]; cur != nil {
		for _, gvr := range cur.resources {
			if !slices.Contains(next.resources, gvr) {
				c.s.RemoveResource(gvr)
			}
		}
	}
	c.served[crd.Name] = next
	c.resourcesChanged()
	c.s.log.Info("serving custom resource", "name", crd.Name, "versions", len(next.resources))
	return nil
}

func (c *crdController) unserve(name string) {
	cur := c.served[name]
	if cur == nil {
		return
	}
	for _, gvr := range cur.resources {
		c.s.RemoveResource(gvr)
	}
	delete(c.served, name)
	c.resourcesChanged()
	c.s.log.Info("stopped serving custom resource", "name", name)
}

// finalize deletes every object of a definition being deleted, then drops its cleanup finalizer
// (which lets the store remove it) and stops serving it, as upstream's finalizer controller does.
func (c *crdController) finalize(ctx context.Context, crd *crdv1.CustomResourceDefinition) error {
	if !slices.Contains(crd.Finalizers, crdv1.CustomResourceCleanupFinalizer) {
		c.unserve(crd.Name)
		return nil
	}
	if c.served[crd.Name] == nil {
		// This server never served it (it started while the definition was terminating): the
		// objects in storage are found through the resource all the same.
		if err := c.serve(crd); err != nil {
			return err
		}
	}
	if cur := c.served[crd.Name]; cur != nil && len(cur.resources) > 0 {
		for _, gvr := range cur.resources {
			if h := c.s.handlerFor(gvr); h != nil {
				if t, ok := h.res.Strategy.(interface{ SetTerminating() }); ok {
					t.SetTerminating()
				}
			}
		}
		h := c.s.handlerFor(cur.resources[0])
		if h != nil {
			if _, err := h.st.DeleteCollection(ctx, "", storage.ListOptions{Recursive: true}, &metav1.DeleteOptions{}, nil); err != nil {
				return fmt.Errorf("delete objects of %s: %w", crd.Name, err)
			}
			left, err := h.st.List(ctx, "", storage.ListOptions{Recursive: true})
			if err != nil {
				return err
			}
			if n := meta.LenList(left); n > 0 {
				return fmt.Errorf("%d objects of %s are still being deleted", n, crd.Name)
			}
		}
	}
	_, _, err := c.h.st.Update(ctx, "", crd.Name, func(_ context.Context, current runtime.Object) (runtime.Object, error) {
		cur := current.(*crdv1.CustomResourceDefinition).DeepCopy()
		cur.Finalizers = slices.DeleteFunc(cur.Finalizers, func(f string) bool { return f == crdv1.CustomResourceCleanupFinalizer })
		return cur, nil
	}, store.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	c.unserve(crd.Name)
	return nil
}

// resourcesChanged tells discovery and OpenAPI the served set changed, or owes them the notice
// while a sync runs.
func (c *crdController) resourcesChanged() {
	if c.batching {
		c.pending = true
		return
	}
	c.s.resourcesChanged()
}

// resourcesChanged tells discovery and OpenAPI the served set changed.
func (s *Server) resourcesChanged() {
	if s.cfg.OnResourcesChanged != nil {
		s.cfg.OnResourcesChanged(s.Resources())
	}
}
