package openapi

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/registry"
)

// Service owns the OpenAPI documents of the served resources. It is safe for concurrent use;
// Update swaps in a new set of documents atomically.
type Service struct {
	clock       clock.PassiveClock
	infoVersion string
	defs        *definitionSet
	converter   managedfields.TypeConverter

	mu sync.RWMutex
	// pending are the documents of the last Update, rendered at the first request for them;
	// rendered are the last documents rendered, served while pending's rendering fails.
	pending  *pendingDocuments
	rendered *renderedDocuments
}

// pendingDocuments are documents whose paths are built (so an Update with a resource that has no
// definition fails at once) and whose rendering (every schema to JSON, a quarter of a second of
// CPU for the built-in types) waits for the first request: a start or a burst of CRD changes
// renders nothing that no client asked for.
type pendingDocuments struct {
	byGV        map[schema.GroupVersion]*groupVersionPaths
	defs        *definitionSet
	infoVersion string
	build       buildStamp

	once sync.Once
	docs *renderedDocuments
	err  error
}

func (p *pendingDocuments) render() (*renderedDocuments, error) {
	p.once.Do(func() { p.docs, p.err = renderPaths(p.byGV, p.defs, p.infoVersion, p.build) })
	return p.docs, p.err
}

// Option configures a Service.
type Option func(*Service)

// WithClock sets the clock that stamps Last-Modified and the Expires of hashed v3 documents.
func WithClock(c clock.PassiveClock) Option {
	return func(s *Service) { s.clock = c }
}

// WithVersion sets info.version of the documents (upstream puts the server's git version there).
func WithVersion(version string) Option {
	return func(s *Service) { s.infoVersion = version }
}

// New builds the definitions of every generated type, tagged with the kinds scheme registers, and
// the documents for resources. It fails when a resource's type has no generated definition.
func New(scheme *runtime.Scheme, resources []*registry.Resource, opts ...Option) (*Service, error) {
	s := &Service{clock: clock.RealClock{}, infoVersion: "unversioned"}
	for _, opt := range opts {
		opt(s)
	}
	defs, err := buildDefinitions(scheme, nil)
	if err != nil {
		return nil, fmt.Errorf("openapi definitions: %w", err)
	}
	s.defs = defs
	converter, err := managedfields.NewTypeConverter(defs.v3, false)
	if err != nil {
		return nil, fmt.Errorf("openapi type converter: %w", err)
	}
	s.converter = converter
	if err := s.Update(resources); err != nil {
		return nil, err
	}
	return s, nil
}

// Update rebuilds the documents for a new set of resources (a CustomResourceDefinition was added or
// removed). On error the previous documents stay in place.
func (s *Service) Update(resources []*registry.Resource) error {
	defs, err := s.defs.withCustomResources(resources)
	if err != nil {
		return fmt.Errorf("build openapi documents: %w", err)
	}
	byGV, err := buildPaths(resources, defs)
	if err != nil {
		return fmt.Errorf("build openapi documents: %w", err)
	}
	next := &pendingDocuments{byGV: byGV, defs: defs, infoVersion: s.infoVersion, build: buildStamp(s.clock.Now())}
	s.mu.Lock()
	s.pending = next
	s.mu.Unlock()
	return nil
}

// TypeConverter converts objects of every kind with a definition to structured-merge-diff typed
// values, for server-side apply.
func (s *Service) TypeConverter() managedfields.TypeConverter {
	return s.converter
}

// Schemas returns the v3 form of every definition by name (refs point to #/components/schemas/).
// The schemas are shared: callers must not modify them.
func (s *Service) Schemas() map[string]*spec.Schema {
	return s.defs.v3
}

// current renders the pending documents if no request has yet; when that fails (it has not been
// seen to: the paths were built at Update), the last rendered ones are served.
func (s *Service) current() (*renderedDocuments, error) {
	s.mu.RLock()
	pending := s.pending
	s.mu.RUnlock()
	docs, err := pending.render()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil && s.rendered != nil:
		return s.rendered, nil
	case err != nil:
		return nil, err
	case s.pending == pending:
		s.rendered = docs
	}
	return docs, nil
}

// currentOrError is current, answering 500 when there are no documents.
func (s *Service) currentOrError(w http.ResponseWriter) *renderedDocuments {
	docs, err := s.current()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return nil
	}
	return docs
}

// ServeV2 answers GET /openapi/v2 in JSON or protobuf, as the Accept header asks.
func (s *Service) ServeV2(w http.ResponseWriter, r *http.Request) {
	if !readOnlyMethod(w, r) {
		return
	}
	docs := s.currentOrError(w)
	if docs == nil {
		return
	}
	writeDocument(w, r, docs.v2, v2Representations, nil)
}

// ServeV3 answers GET /openapi/v3 (the index) and /openapi/v3/<prefix> (the document of one
// group-version, "api/v1" or "apis/apps/v1"). A ?hash that names the current document makes the
// answer cacheable forever; a stale hash redirects to the current one, as upstream does. others
// are index entries of documents served by someone else (aggregated API servers), by prefix
// ("apis/wardle.example.com/v1beta1") to their server-relative URL; the index lists them too.
func (s *Service) ServeV3(w http.ResponseWriter, r *http.Request, others map[string]string) {
	if !readOnlyMethod(w, r) {
		return
	}
	docs := s.currentOrError(w)
	if docs == nil {
		return
	}
	prefix := strings.Trim(strings.TrimPrefix(r.URL.Path, "/openapi/v3"), "/")
	if prefix == "" {
		index := docs.v3Index
		if len(others) > 0 {
			merged, err := mergedV3Index(docs, others)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			index = merged
		}
		writeDocument(w, r, index, jsonOnly, nil)
		return
	}
	doc, ok := docs.v3[prefix]
	if !ok {
		http.Error(w, fmt.Sprintf("no OpenAPI v3 document for %q", prefix), http.StatusNotFound)
		return
	}
	hash := r.URL.Query().Get("hash")
	if hash != "" && hash != doc.hash {
		http.Redirect(w, r, v3DocumentURL(prefix, doc.hash), http.StatusMovedPermanently)
		return
	}
	var cacheForever func(http.Header)
	if hash != "" {
		now := s.clock.Now()
		cacheForever = func(h http.Header) {
			h.Set("Cache-Control", "public, immutable")
			h.Set("Expires", now.AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
		}
	}
	writeDocument(w, r, doc, v3Representations, cacheForever)
}

func readOnlyMethod(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}
