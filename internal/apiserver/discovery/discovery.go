package discovery

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/registry"
)

const (
	discoveryGroup = "apidiscovery.k8s.io"
	aggregatedKind = "APIGroupDiscoveryList"
)

// Discovery serves the discovery documents of a set of resources. It is safe for concurrent use;
// Update swaps in new documents atomically.
type Discovery struct {
	mu    sync.RWMutex
	state *documents

	// inputs are what state was prepared from, so that either part can be replaced alone.
	inputsMu  sync.Mutex
	resources []*registry.Resource
	extra     map[schema.GroupResource][]Subresource
	external  []External
}

// documents are the prepared answers of one set of resources.
type documents struct {
	coreVersions []string
	groupList    metav1.APIGroupList
	groups       map[string]metav1.APIGroup           // by group name
	resources    map[string]metav1.APIResourceList    // by "v1" or "apps/v1"
	aggregated   map[aggregatedKey]*aggregatedPayload // /api and /apis, per discovery version
}

type aggregatedKey struct {
	apis    bool   // /apis rather than /api
	version string // "v2" or "v2beta1"
}

type aggregatedPayload struct {
	body []byte
	etag string
	err  error
}

// New prepares the discovery documents of resources. extraSubresources lists, by group and
// resource, the subresources served beyond /status and /scale.
func New(resources []*registry.Resource, extraSubresources map[schema.GroupResource][]Subresource) *Discovery {
	d := &Discovery{}
	d.Update(resources, extraSubresources)
	return d
}

// Update replaces the served resources (a CustomResourceDefinition was added or removed).
func (d *Discovery) Update(resources []*registry.Resource, extraSubresources map[schema.GroupResource][]Subresource) {
	d.inputsMu.Lock()
	defer d.inputsMu.Unlock()
	d.resources, d.extra = resources, extraSubresources
	d.rebuild()
}

// rebuild prepares the documents from the inputs; the caller holds inputsMu.
func (d *Discovery) rebuild() {
	state := prepare(buildModel(d.resources, d.extra), d.external)
	d.mu.Lock()
	d.state = state
	d.mu.Unlock()
}

func (d *Discovery) current() *documents {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.state
}

func prepare(m *model, external []External) *documents {
	docs := &documents{
		groupList:  metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{}},
		groups:     map[string]metav1.APIGroup{},
		resources:  map[string]metav1.APIResourceList{},
		aggregated: map[aggregatedKey]*aggregatedPayload{},
	}
	addResources := func(group *groupModel) {
		for _, v := range group.versions {
			gv := schema.GroupVersion{Group: group.name, Version: v}
			docs.resources[gv.String()] = metav1.APIResourceList{
				TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: gv.String(),
				APIResources: apiResources(gv, group.byVer[v]),
			}
		}
	}
	coreList := apidiscoveryv2.APIGroupDiscoveryList{Items: []apidiscoveryv2.APIGroupDiscovery{}}
	if m.core != nil {
		docs.coreVersions = m.core.versions
		addResources(m.core)
		coreList.Items = append(coreList.Items, aggregatedGroup(m.core))
	}
	groupsList := apidiscoveryv2.APIGroupDiscoveryList{Items: []apidiscoveryv2.APIGroupDiscovery{}}
	for _, group := range m.groups {
		legacy := legacyGroup(group)
		docs.groupList.Groups = append(docs.groupList.Groups, legacy)
		docs.groups[group.name] = legacy
		addResources(group)
		groupsList.Items = append(groupsList.Items, aggregatedGroup(group))
	}
	mergeExternal(docs, &groupsList, external)
	for _, apis := range []bool{false, true} {
		list := coreList
		if apis {
			list = groupsList
		}
		for _, version := range []string{"v2", "v2beta1"} {
			docs.aggregated[aggregatedKey{apis: apis, version: version}] = encodeAggregated(list, version)
		}
	}
	return docs
}

// encodeAggregated serializes list as apidiscovery.k8s.io/<version>. An encoding failure is kept
// and answered as a 500 when the document is asked for.
func encodeAggregated(list apidiscoveryv2.APIGroupDiscoveryList, version string) *aggregatedPayload {
	list.TypeMeta = metav1.TypeMeta{Kind: aggregatedKind, APIVersion: discoveryGroup + "/v2"}
	var out interface{} = &list
	if version == "v2beta1" {
		out = toV2beta1(list)
	}
	body, err := json.Marshal(out)
	if err != nil {
		return &aggregatedPayload{err: fmt.Errorf("encode aggregated discovery %s: %w", version, err)}
	}
	return &aggregatedPayload{body: body, etag: fmt.Sprintf("%X", sha512.Sum512(body))}
}

// Handles reports whether path is a discovery path: /api, /api/<version>, /apis, /apis/<group> or
// /apis/<group>/<version> (a trailing slash allowed). Longer paths are resource requests.
func Handles(path string) bool {
	segments := splitPath(path)
	switch {
	case len(segments) == 0:
		return false
	case segments[0] == "api":
		return len(segments) <= 2
	case segments[0] == "apis":
		return len(segments) <= 3
	}
	return false
}

func splitPath(path string) []string {
	trimmed := strings.Trim(path, "/")
	if trimmed == "" {
		return nil
	}
	return strings.Split(trimmed, "/")
}

// ServeHTTP answers the discovery paths (see Handles) and 404 for anything else.
func (d *Discovery) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeStatus(w, apierrors.NewMethodNotSupported(schema.GroupResource{}, strings.ToLower(r.Method)))
		return
	}
	segments := splitPath(r.URL.Path)
	switch {
	case len(segments) == 1 && segments[0] == "api":
		d.ServeAPI(w, r)
	case len(segments) == 1 && segments[0] == "apis":
		d.ServeAPIs(w, r)
	case len(segments) == 2 && segments[0] == "api":
		d.serveResourceList(w, r, schema.GroupVersion{Version: segments[1]})
	case len(segments) == 2 && segments[0] == "apis":
		d.serveGroup(w, r, segments[1])
	case len(segments) == 3 && segments[0] == "apis":
		d.serveResourceList(w, r, schema.GroupVersion{Group: segments[1], Version: segments[2]})
	default:
		writeNotFound(w)
	}
}

// ServeAPI answers /api: the core group's APIVersions, or the aggregated document of the core group
// when the Accept header asks for it.
func (d *Discovery) ServeAPI(w http.ResponseWriter, r *http.Request) {
	docs := d.current()
	if d.serveAggregated(w, r, docs, false) {
		return
	}
	versions := metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: docs.coreVersions,
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{
			ClientCIDR: "0.0.0.0/0", ServerAddress: serverAddress(r),
		}},
	}
	if versions.Versions == nil {
		versions.Versions = []string{}
	}
	writeJSON(w, r, &versions)
}

// ServeAPIs answers /apis: the APIGroupList, or the aggregated document of every non-core group
// when the Accept header asks for it.
func (d *Discovery) ServeAPIs(w http.ResponseWriter, r *http.Request) {
	docs := d.current()
	if d.serveAggregated(w, r, docs, true) {
		return
	}
	writeJSON(w, r, &docs.groupList)
}

func (d *Discovery) serveGroup(w http.ResponseWriter, r *http.Request, name string) {
	group, ok := d.current().groups[name]
	if !ok {
		writeNotFound(w)
		return
	}
	writeJSON(w, r, &group)
}

func (d *Discovery) serveResourceList(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion) {
	list, ok := d.current().resources[gv.String()]
	if !ok {
		writeNotFound(w)
		return
	}
	writeJSON(w, r, &list)
}

// serveAggregated answers with the aggregated document when the most preferred acceptable media
// type of the request is one; it returns false to fall back to the legacy document.
func (d *Discovery) serveAggregated(w http.ResponseWriter, r *http.Request, docs *documents, apis bool) bool {
	w.Header().Add("Vary", "Accept")
	version, ok := negotiateAggregated(r.Header.Get("Accept"))
	if !ok {
		return false
	}
	payload := docs.aggregated[aggregatedKey{apis: apis, version: version}]
	if payload.err != nil {
		writeStatus(w, apierrors.NewInternalError(payload.err))
		return true
	}
	w.Header().Set("Content-Type", aggregatedContentType(version))
	w.Header().Set("Etag", strconv.Quote(payload.etag))
	// ServeContent answers If-None-Match with 304; a zero time leaves Last-Modified out.
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(payload.body))
	return true
}

func aggregatedContentType(version string) string {
	return "application/json;g=" + discoveryGroup + ";v=" + version + ";as=" + aggregatedKind
}

// acceptClause is one media range of an Accept header.
type acceptClause struct {
	mediaType string
	params    map[string]string
	q         float64
}

// parseAccept splits an Accept header into clauses ordered by q, keeping the client's order among
// equal q values (the order client-go uses to state its preference).
func parseAccept(accept string) []acceptClause {
	var clauses []acceptClause
	for _, part := range strings.Split(accept, ",") {
		mediaType, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if raw, ok := params["q"]; ok {
			if parsed, err := strconv.ParseFloat(raw, 64); err == nil {
				q = parsed
			}
			delete(params, "q")
		}
		clauses = append(clauses, acceptClause{mediaType: mediaType, params: params, q: q})
	}
	sort.SliceStable(clauses, func(i, j int) bool { return clauses[i].q > clauses[j].q })
	return clauses
}

// negotiateAggregated walks the Accept clauses in preference order. The first clause that names a
// form skiff serves decides: an apidiscovery.k8s.io APIGroupDiscoveryList in JSON picks aggregated
// discovery, plain JSON (or a wildcard) picks the legacy documents. Protobuf, other kinds and unknown
// profiles are skipped: skiff does not serve them.
func negotiateAggregated(accept string) (string, bool) {
	for _, clause := range parseAccept(accept) {
		if clause.q <= 0 {
			continue
		}
		switch clause.mediaType {
		case "application/json", "application/*", "*/*":
		default:
			continue
		}
		if len(clause.params) == 0 {
			return "", false
		}
		if clause.params["g"] != discoveryGroup || clause.params["as"] != aggregatedKind {
			continue
		}
		if profile, ok := clause.params["profile"]; ok && profile != "nopeer" {
			continue
		}
		// skiff has no peer API servers, so the no-peer profile is the whole document.
		if v := clause.params["v"]; v == "v2" || v == "v2beta1" {
			return v, true
		}
	}
	return "", false
}

func serverAddress(r *http.Request) string {
	if r.Host != "" {
		return r.Host
	}
	if addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		return addr.String()
	}
	return ""
}

func writeJSON(w http.ResponseWriter, r *http.Request, v interface{}) {
	body, err := json.Marshal(v)
	if err != nil {
		writeStatus(w, apierrors.NewInternalError(fmt.Errorf("encode discovery document: %w", err)))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

func writeNotFound(w http.ResponseWriter) {
	writeStatus(w, apierrors.NewGenericServerResponse(http.StatusNotFound, "get", schema.GroupResource{}, "", "", 0, false))
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	status := err.Status()
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	body, _ := json.Marshal(&status)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(status.Code))
	_, _ = w.Write(body)
}
