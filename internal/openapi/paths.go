package openapi

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/skiff-sh/skiff/internal/registry"
)

// Definition names of the apimachinery types every resource's operations refer to.
const (
	statusDefinition        = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
	deleteOptionsDefinition = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
	patchDefinition         = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
	watchEventDefinition    = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"
	scaleDefinition         = "io.k8s.api.autoscaling.v1.Scale"
)

var scaleKind = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}

// Media types declared on operations.
const (
	mediaJSON            = "application/json"
	mediaYAML            = "application/yaml"
	mediaJSONWatch       = "application/json;stream=watch"
	mediaJSONPatch       = "application/json-patch+json"
	mediaMergePatch      = "application/merge-patch+json"
	mediaStrategicMerge  = "application/strategic-merge-patch+json"
	mediaApplyPatchYAML  = "application/apply-patch+yaml"
	mediaAnything        = "*/*"
	namespacePathSegment = "namespaces/{namespace}"
)

// groupVersionPaths is what one group-version contributes to the documents: its paths and the
// definitions they refer to directly.
type groupVersionPaths struct {
	groupVersion schema.GroupVersion
	paths        map[string]spec.PathItem
	roots        map[string]bool
}

// groupVersionPrefix is the URL prefix of a group-version without the leading slash: "api/v1",
// "apis/apps/v1". It is also the key of the group-version in the v3 index.
func groupVersionPrefix(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

// buildPaths lays out the operations of every resource, grouped by group-version.
func buildPaths(resources []*registry.Resource, defs *definitionSet) (map[schema.GroupVersion]*groupVersionPaths, error) {
	out := map[schema.GroupVersion]*groupVersionPaths{}
	for _, resource := range resources {
		if resource == nil {
			continue
		}
		gvp, ok := out[resource.GroupVersion]
		if !ok {
			gvp = &groupVersionPaths{groupVersion: resource.GroupVersion, paths: map[string]spec.PathItem{}, roots: map[string]bool{}}
			out[resource.GroupVersion] = gvp
		}
		if err := addResourcePaths(gvp, resource, defs); err != nil {
			return nil, fmt.Errorf("openapi paths of %s: %w", resource.GroupVersionResource(), err)
		}
	}
	return out, nil
}

func objectDefinition(newObject func() runtime.Object, what string, defs *definitionSet) (string, error) {
	if newObject == nil {
		return "", fmt.Errorf("%s constructor is nil", what)
	}
	name := DefinitionName(reflect.TypeOf(newObject()))
	if _, ok := defs.v2[name]; !ok {
		return "", fmt.Errorf("no OpenAPI definition %q for the %s type", name, what)
	}
	return name, nil
}

// resourceDefinitions names the definitions of a resource's objects and lists: those of their Go
// types, or for resources built at run time the names withCustomResources gave them.
func resourceDefinitions(resource *registry.Resource, defs *definitionSet) (string, string, error) {
	if resource.Objects != nil {
		kind, list := CustomResourceDefinitionNames(resource.GroupVersionKind(), resource.ListKind)
		for _, name := range []string{kind, list} {
			if _, ok := defs.v2[name]; !ok {
				return "", "", fmt.Errorf("no OpenAPI definition %q", name)
			}
		}
		return kind, list, nil
	}
	kindDefinition, err := objectDefinition(resource.New, "object", defs)
	if err != nil {
		return "", "", err
	}
	listDefinition, err := objectDefinition(resource.NewList, "list", defs)
	if err != nil {
		return "", "", err
	}
	return kindDefinition, listDefinition, nil
}

// resourceOperations knows how to name and describe the operations of one resource.
type resourceOperations struct {
	resource       *registry.Resource
	kindDefinition string
	listDefinition string
	gvkExtension   interface{} // one group/version/kind map, as upstream puts on operations
	opPrefix       string      // "CoreV1"
	tag            string      // "core_v1"
	patchTypes     []string
	deleteReturns  string // definition a single delete answers with
}

func addResourcePaths(gvp *groupVersionPaths, resource *registry.Resource, defs *definitionSet) error {
	kindDefinition, listDefinition, err := resourceDefinitions(resource, defs)
	if err != nil {
		return err
	}
	ops := &resourceOperations{
		resource:       resource,
		kindDefinition: kindDefinition,
		listDefinition: listDefinition,
		gvkExtension:   gvkExtensionValue(resource.GroupVersionKind())[0],
		opPrefix:       groupOperationPrefix(resource.GroupVersion.Group) + upperFirst(resource.GroupVersion.Version),
		tag:            groupTag(resource.GroupVersion.Group, resource.GroupVersion.Version),
		patchTypes:     []string{mediaJSONPatch, mediaMergePatch, mediaApplyPatchYAML},
		deleteReturns:  statusDefinition,
	}
	if _, unstructured := resource.New().(runtime.Unstructured); !unstructured {
		// Strategic merge needs the Go struct tags of a compiled-in type.
		ops.patchTypes = []string{mediaJSONPatch, mediaMergePatch, mediaStrategicMerge, mediaApplyPatchYAML}
	}
	if _, graceful := resource.Strategy.(registry.GracefulDeleter); graceful {
		// A graceful delete answers with the object as it now is (deletionTimestamp set).
		ops.deleteReturns = kindDefinition
	}
	for _, name := range []string{kindDefinition, listDefinition, statusDefinition, deleteOptionsDefinition, patchDefinition, watchEventDefinition} {
		gvp.roots[name] = true
	}

	base := "/" + groupVersionPrefix(resource.GroupVersion)
	collection := base + "/" + resource.Plural
	watchCollection := base + "/watch/" + resource.Plural
	scopeParams := []spec.Parameter(nil)
	namespaced := ""
	if resource.Namespaced {
		collection = base + "/" + namespacePathSegment + "/" + resource.Plural
		watchCollection = base + "/watch/" + namespacePathSegment + "/" + resource.Plural
		scopeParams = []spec.Parameter{pathParameter("namespace", "object name and auth scope, such as for teams and projects")}
		namespaced = "Namespaced"
	}
	item := collection + "/{name}"
	itemParams := append([]spec.Parameter{pathParameter("name", "name of the "+resource.Kind)}, scopeParams...)

	collectionItem := spec.PathItem{}
	collectionItem.Parameters = append(append([]spec.Parameter(nil), scopeParams...), prettyParameter())
	if hasVerb(resource, "list") {
		collectionItem.Get = ops.list("list"+ops.opPrefix+namespaced+resource.Kind, "list or watch objects of kind "+resource.Kind)
	}
	if hasVerb(resource, "create") {
		collectionItem.Post = ops.create("create" + ops.opPrefix + namespaced + resource.Kind)
	}
	if hasVerb(resource, "deletecollection") {
		collectionItem.Delete = ops.deleteCollection("delete" + ops.opPrefix + "Collection" + namespaced + resource.Kind)
	}
	putPath(gvp, collection, collectionItem)

	itemPath := spec.PathItem{}
	itemPath.Parameters = append(append([]spec.Parameter(nil), itemParams...), prettyParameter())
	if hasVerb(resource, "get") {
		itemPath.Get = ops.read("read"+ops.opPrefix+namespaced+resource.Kind, "read the specified "+resource.Kind, kindDefinition, ops.gvkExtension)
	}
	if hasVerb(resource, "update") {
		itemPath.Put = ops.replace("replace"+ops.opPrefix+namespaced+resource.Kind, "replace the specified "+resource.Kind, kindDefinition, ops.gvkExtension)
	}
	if hasVerb(resource, "patch") {
		itemPath.Patch = ops.patch("patch"+ops.opPrefix+namespaced+resource.Kind, "partially update the specified "+resource.Kind, kindDefinition, ops.gvkExtension)
	}
	if hasVerb(resource, "delete") {
		itemPath.Delete = ops.deleteOne("delete" + ops.opPrefix + namespaced + resource.Kind)
	}
	putPath(gvp, item, itemPath)

	if hasVerb(resource, "watch") {
		watchList := spec.PathItem{}
		watchList.Parameters = append(append(append([]spec.Parameter(nil), scopeParams...), listParameters()...), prettyParameter())
		watchList.Get = ops.watch("watch"+ops.opPrefix+namespaced+resource.Kind+"List", "watchlist",
			"watch individual changes to a list of "+resource.Kind+". deprecated: use the 'watch' parameter with a list operation instead.")
		putPath(gvp, watchCollection, watchList)

		watchItem := spec.PathItem{}
		watchItem.Parameters = append(append(append([]spec.Parameter(nil), itemParams...), listParameters()...), prettyParameter())
		watchItem.Get = ops.watch("watch"+ops.opPrefix+namespaced+resource.Kind, "watch",
			"watch changes to an object of kind "+resource.Kind+". deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter.")
		putPath(gvp, watchCollection+"/{name}", watchItem)
	}

	if resource.Namespaced {
		// Listing and watching across all namespaces.
		allNamespaces := spec.PathItem{}
		allNamespaces.Parameters = []spec.Parameter{prettyParameter()}
		if hasVerb(resource, "list") {
			allNamespaces.Get = ops.list("list"+ops.opPrefix+resource.Kind+"ForAllNamespaces", "list or watch objects of kind "+resource.Kind)
			putPath(gvp, base+"/"+resource.Plural, allNamespaces)
		}
		if hasVerb(resource, "watch") {
			watchAll := spec.PathItem{}
			watchAll.Parameters = append(listParameters(), prettyParameter())
			watchAll.Get = ops.watch("watch"+ops.opPrefix+resource.Kind+"ListForAllNamespaces", "watchlist",
				"watch individual changes to a list of "+resource.Kind+". deprecated: use the 'watch' parameter with a list operation instead.")
			putPath(gvp, base+"/watch/"+resource.Plural, watchAll)
		}
	}

	if resource.Status != nil {
		status := spec.PathItem{}
		status.Parameters = append(append([]spec.Parameter(nil), itemParams...), prettyParameter())
		status.Get = ops.read("read"+ops.opPrefix+namespaced+resource.Kind+"Status", "read status of the specified "+resource.Kind, kindDefinition, ops.gvkExtension)
		status.Put = ops.replace("replace"+ops.opPrefix+namespaced+resource.Kind+"Status", "replace status of the specified "+resource.Kind, kindDefinition, ops.gvkExtension)
		status.Patch = ops.patch("patch"+ops.opPrefix+namespaced+resource.Kind+"Status", "partially update status of the specified "+resource.Kind, kindDefinition, ops.gvkExtension)
		putPath(gvp, item+"/status", status)
	}
	// Subresources that update the whole object through their own strategy (approval, finalize)
	// read and write the resource's own kind, as /status does; sorted so the document is stable.
	subNames := make([]string, 0, len(resource.Subresources))
	for name := range resource.Subresources {
		if name != "status" {
			subNames = append(subNames, name)
		}
	}
	sort.Strings(subNames)
	for _, name := range subNames {
		_, verbs, ok := resource.SubresourceStrategy(name)
		if !ok {
			continue
		}
		if verbs == nil {
			verbs = []string{"get", "update", "patch"}
		}
		suffix := strings.ToUpper(name[:1]) + name[1:]
		sub := spec.PathItem{}
		sub.Parameters = append(append([]spec.Parameter(nil), itemParams...), prettyParameter())
		if slices.Contains(verbs, "get") {
			sub.Get = ops.read("read"+ops.opPrefix+namespaced+resource.Kind+suffix, "read "+name+" of the specified "+resource.Kind, kindDefinition, ops.gvkExtension)
		}
		if slices.Contains(verbs, "update") {
			sub.Put = ops.replace("replace"+ops.opPrefix+namespaced+resource.Kind+suffix, "replace "+name+" of the specified "+resource.Kind, kindDefinition, ops.gvkExtension)
		}
		if slices.Contains(verbs, "patch") {
			sub.Patch = ops.patch("patch"+ops.opPrefix+namespaced+resource.Kind+suffix, "partially update "+name+" of the specified "+resource.Kind, kindDefinition, ops.gvkExtension)
		}
		putPath(gvp, item+"/"+name, sub)
	}
	if resource.Scale != nil {
		gvp.roots[scaleDefinition] = true
		scaleGVK := gvkExtensionValue(scaleKind)[0]
		scale := spec.PathItem{}
		scale.Parameters = append([]spec.Parameter{pathParameter("name", "name of the Scale")}, scopeParams...)
		scale.Parameters = append(scale.Parameters, prettyParameter())
		scale.Get = ops.read("read"+ops.opPrefix+namespaced+resource.Kind+"Scale", "read scale of the specified "+resource.Kind, scaleDefinition, scaleGVK)
		scale.Put = ops.replace("replace"+ops.opPrefix+namespaced+resource.Kind+"Scale", "replace scale of the specified "+resource.Kind, scaleDefinition, scaleGVK)
		scale.Patch = ops.patch("patch"+ops.opPrefix+namespaced+resource.Kind+"Scale", "partially update scale of the specified "+resource.Kind, scaleDefinition, scaleGVK)
		putPath(gvp, item+"/scale", scale)
	}
	return nil
}

func putPath(gvp *groupVersionPaths, path string, item spec.PathItem) {
	if item.Get == nil && item.Put == nil && item.Post == nil && item.Delete == nil && item.Patch == nil {
		return
	}
	gvp.paths[path] = item
}

func hasVerb(resource *registry.Resource, verb string) bool {
	if resource.Verbs == nil {
		return true
	}
	for _, v := range resource.Verbs {
		if v == verb {
			return true
		}
	}
	return false
}

func (o *resourceOperations) operation(id, description, action string, gvk interface{}) *spec.Operation {
	op := &spec.Operation{}
	op.ID = id
	op.Description = description
	op.Tags = []string{o.tag}
	op.Schemes = []string{"https"}
	op.Consumes = []string{mediaAnything}
	op.Produces = []string{mediaJSON, mediaYAML}
	op.Extensions = spec.Extensions{extensionAction: action, extensionGVK: gvk}
	op.Responses = &spec.Responses{ResponsesProps: spec.ResponsesProps{StatusCodeResponses: map[int]spec.Response{
		http.StatusUnauthorized: {ResponseProps: spec.ResponseProps{Description: "Unauthorized"}},
	}}}
	return op
}

func addResponse(op *spec.Operation, code int, definition string) {
	op.Responses.StatusCodeResponses[code] = spec.Response{ResponseProps: spec.ResponseProps{
		Description: http.StatusText(code),
		Schema:      refSchema(definition),
	}}
}

func (o *resourceOperations) list(id, description string) *spec.Operation {
	op := o.operation(id, description, "list", o.gvkExtension)
	op.Produces = []string{mediaJSON, mediaYAML, mediaJSONWatch}
	op.Parameters = listParameters()
	addResponse(op, http.StatusOK, o.listDefinition)
	return op
}

func (o *resourceOperations) watch(id, action, description string) *spec.Operation {
	op := o.operation(id, description, action, o.gvkExtension)
	op.Produces = []string{mediaJSON, mediaJSONWatch}
	addResponse(op, http.StatusOK, watchEventDefinition)
	return op
}

func (o *resourceOperations) create(id string) *spec.Operation {
	op := o.operation(id, "create a "+o.resource.Kind, "post", o.gvkExtension)
	op.Parameters = append([]spec.Parameter{bodyParameter(o.kindDefinition, true)}, writeParameters()...)
	addResponse(op, http.StatusOK, o.kindDefinition)
	addResponse(op, http.StatusCreated, o.kindDefinition)
	addResponse(op, http.StatusAccepted, o.kindDefinition)
	return op
}

func (o *resourceOperations) read(id, description, definition string, gvk interface{}) *spec.Operation {
	op := o.operation(id, description, "get", gvk)
	addResponse(op, http.StatusOK, definition)
	return op
}

func (o *resourceOperations) replace(id, description, definition string, gvk interface{}) *spec.Operation {
	op := o.operation(id, description, "put", gvk)
	op.Parameters = append([]spec.Parameter{bodyParameter(definition, true)}, writeParameters()...)
	addResponse(op, http.StatusOK, definition)
	addResponse(op, http.StatusCreated, definition)
	return op
}

func (o *resourceOperations) patch(id, description, definition string, gvk interface{}) *spec.Operation {
	op := o.operation(id, description, "patch", gvk)
	op.Consumes = append([]string(nil), o.patchTypes...)
	op.Parameters = append([]spec.Parameter{bodyParameter(patchDefinition, true)}, writeParameters()...)
	op.Parameters = append(op.Parameters, queryParameter("force", "boolean",
		"Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests."))
	addResponse(op, http.StatusOK, definition)
	addResponse(op, http.StatusCreated, definition)
	return op
}

func (o *resourceOperations) deleteOne(id string) *spec.Operation {
	op := o.operation(id, "delete a "+o.resource.Kind, "delete", o.gvkExtension)
	op.Parameters = append([]spec.Parameter{bodyParameter(deleteOptionsDefinition, false)}, deleteParameters()...)
	addResponse(op, http.StatusOK, o.deleteReturns)
	addResponse(op, http.StatusAccepted, o.deleteReturns)
	return op
}

func (o *resourceOperations) deleteCollection(id string) *spec.Operation {
	op := o.operation(id, "delete collection of "+o.resource.Kind, "deletecollection", o.gvkExtension)
	op.Parameters = append([]spec.Parameter{bodyParameter(deleteOptionsDefinition, false)}, deleteParameters()...)
	op.Parameters = append(op.Parameters, listParameters()...)
	sortParameters(op.Parameters)
	addResponse(op, http.StatusOK, statusDefinition)
	return op
}

func refSchema(definition string) *spec.Schema {
	return &spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef(v2RefPrefix + definition)}}
}

func pathParameter(name, description string) spec.Parameter {
	p := spec.Parameter{}
	p.Name = name
	p.In = "path"
	p.Required = true
	p.Type = "string"
	p.UniqueItems = true
	p.Description = description
	return p
}

func queryParameter(name, typ, description string) spec.Parameter {
	p := spec.Parameter{}
	p.Name = name
	p.In = "query"
	p.Type = typ
	p.UniqueItems = true
	p.Description = description
	return p
}

func bodyParameter(definition string, required bool) spec.Parameter {
	p := spec.Parameter{}
	p.Name = "body"
	p.In = "body"
	p.Required = required
	p.Schema = refSchema(definition)
	return p
}

func prettyParameter() spec.Parameter {
	return queryParameter("pretty", "string", "If 'true', then the output is pretty printed.")
}

// listParameters are the query parameters of list, watch and deletecollection.
func listParameters() []spec.Parameter {
	return []spec.Parameter{
		queryParameter("allowWatchBookmarks", "boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers may ignore it; clients must not assume bookmarks arrive at any interval."),
		queryParameter("continue", "string", "The continue option is set when more results are to be retrieved from the server: pass the continue value of the previous page's list metadata."),
		queryParameter("fieldSelector", "string", "A selector to restrict the list of returned objects by their fields. Defaults to everything."),
		queryParameter("labelSelector", "string", "A selector to restrict the list of returned objects by their labels. Defaults to everything."),
		queryParameter("limit", "integer", "limit is the maximum number of responses to return for a list call. If more items exist, the server sets the continue field of the list metadata."),
		queryParameter("resourceVersion", "string", "resourceVersion sets a constraint on what resource versions a request may be served from. Defaults to unset."),
		queryParameter("resourceVersionMatch", "string", "resourceVersionMatch determines how resourceVersion is applied to list calls (Exact or NotOlderThan)."),
		queryParameter("sendInitialEvents", "boolean", "`sendInitialEvents=true` may be set together with `watch=true`: the stream then begins with synthetic events for the current state of all objects."),
		queryParameter("timeoutSeconds", "integer", "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity."),
		queryParameter("watch", "boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion."),
	}
}

// writeParameters are the query parameters of create, update and patch.
func writeParameters() []spec.Parameter {
	return []spec.Parameter{
		queryParameter("dryRun", "string", "When present, indicates that modifications should not be persisted. Valid value: All."),
		queryParameter("fieldManager", "string", "fieldManager is a name associated with the actor or entity that is making these changes."),
		queryParameter("fieldValidation", "string", "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields: Ignore, Warn (the default) or Strict."),
	}
}

// deleteParameters are the query parameters of delete and deletecollection.
func deleteParameters() []spec.Parameter {
	return []spec.Parameter{
		queryParameter("dryRun", "string", "When present, indicates that modifications should not be persisted. Valid value: All."),
		queryParameter("gracePeriodSeconds", "integer", "The duration in seconds before the object should be deleted. Zero means delete immediately."),
		queryParameter("orphanDependents", "boolean", "Deprecated: please use the PropagationPolicy. Should the dependent objects be orphaned."),
		queryParameter("propagationPolicy", "string", "Whether and how garbage collection will be performed: Orphan, Background or Foreground."),
	}
}

// sortParameters orders parameters body first, then by name, so merged parameter lists are stable.
func sortParameters(params []spec.Parameter) {
	for i := 1; i < len(params); i++ {
		for j := i; j > 0 && parameterLess(params[j], params[j-1]); j-- {
			params[j], params[j-1] = params[j-1], params[j]
		}
	}
}

func parameterLess(a, b spec.Parameter) bool {
	if a.In != b.In {
		return a.In == "body"
	}
	return strings.Compare(a.Name, b.Name) < 0
}
