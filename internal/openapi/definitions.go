package openapi

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	builderutil "k8s.io/kube-openapi/pkg/builder3/util"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/schemamutation"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/skiff-sh/skiff/internal/openapi/generated"
)

const (
	v2RefPrefix = "#/definitions/"
	v3RefPrefix = "#/components/schemas/"

	extensionGVK       = "x-kubernetes-group-version-kind"
	extensionAction    = "x-kubernetes-action"
	extensionV2Embeded = common.ExtensionV2Schema
)

// definitionSet holds every known schema twice: in v2 form (refs to #/definitions/, the v2-only
// variants openapi-gen embeds for int-or-string and friends, no defaults) and in v3 form (refs to
// #/components/schemas/, refs with siblings wrapped in allOf). Both carry the
// x-kubernetes-group-version-kind extension of every kind the scheme registers.
type definitionSet struct {
	v2           map[string]spec.Schema
	v3           map[string]*spec.Schema
	dependencies map[string][]string
}

// getDefinitionsFunc is the shape of openapi-gen's GetOpenAPIDefinitions.
type getDefinitionsFunc func(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition

func refCallback(prefix string) common.ReferenceCallback {
	return func(name string) spec.Ref {
		return spec.MustCreateRef(prefix + common.EscapeJsonPointer(normalizeDefinitionName(name)))
	}
}

// buildDefinitions renders the generated definitions and tags each kind with the group-version-kinds
// the scheme registers it under.
func buildDefinitions(scheme *runtime.Scheme, getDefinitions getDefinitionsFunc) (*definitionSet, error) {
	if getDefinitions == nil {
		getDefinitions = withSchedulingExplain(withMetrics(withAPIRegistration(withAPIExtensions(generated.GetOpenAPIDefinitions))))
	}
	v2Generated := getDefinitions(refCallback(v2RefPrefix))
	v3Generated := getDefinitions(refCallback(v3RefPrefix))
	kinds := kindsByDefinition(scheme)

	set := &definitionSet{
		v2:           make(map[string]spec.Schema, len(v2Generated)),
		v3:           make(map[string]*spec.Schema, len(v3Generated)),
		dependencies: make(map[string][]string, len(v2Generated)),
	}
	for goName, definition := range v2Generated {
		name := normalizeDefinitionName(goName)
		schemaV2 := definition.Schema
		if embedded, ok := definition.Schema.Extensions[extensionV2Embeded]; ok {
			v2Only, isSchema := embedded.(spec.Schema)
			if !isSchema {
				return nil, fmt.Errorf("definition %s: embedded v2 schema has type %T", name, embedded)
			}
			schemaV2 = v2Only
		}
		pruned := pruneDefaults(&schemaV2)
		schemaV2 = *pruned
		schemaV2.Extensions = withKinds(schemaV2.Extensions, kinds[name])
		set.v2[name] = schemaV2

		deps := make([]string, 0, len(definition.Dependencies))
		for _, dep := range definition.Dependencies {
			deps = append(deps, normalizeDefinitionName(dep))
		}
		set.dependencies[name] = deps
	}
	for goName, definition := range v3Generated {
		name := normalizeDefinitionName(goName)
		schemaV3 := definition.Schema
		schemaV3.Extensions = withKinds(withoutKey(schemaV3.Extensions, extensionV2Embeded), kinds[name])
		set.v3[name] = builderutil.WrapRefs(&schemaV3)
	}
	return set, nil
}

// kindsByDefinition maps each definition name to the group-version-kinds the scheme knows its type
// by, sorted so the documents are stable. Internal versions are not published.
func kindsByDefinition(scheme *runtime.Scheme) map[string][]schema.GroupVersionKind {
	kinds := map[string][]schema.GroupVersionKind{}
	if scheme == nil {
		return kinds
	}
	for gvk, goType := range scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		name := DefinitionName(goType)
		kinds[name] = append(kinds[name], gvk)
	}
	for _, list := range kinds {
		sort.Slice(list, func(i, j int) bool {
			if list[i].Group != list[j].Group {
				return list[i].Group < list[j].Group
			}
			if list[i].Version != list[j].Version {
				return list[i].Version < list[j].Version
			}
			return list[i].Kind < list[j].Kind
		})
	}
	return kinds
}

// withKinds returns extensions (copied, never modified in place) with the GVK extension set to kinds.
func withKinds(extensions spec.Extensions, kinds []schema.GroupVersionKind) spec.Extensions {
	if len(kinds) == 0 {
		return extensions
	}
	out := make(spec.Extensions, len(extensions)+1)
	for k, v := range extensions {
		out[k] = v
	}
	out[extensionGVK] = gvkExtensionValue(kinds...)
	return out
}

func withoutKey(extensions spec.Extensions, key string) spec.Extensions {
	if _, ok := extensions[key]; !ok {
		return extensions
	}
	out := make(spec.Extensions, len(extensions))
	for k, v := range extensions {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// gvkExtensionValue is the form client-go, kubectl and managedfields parse: a list of maps with
// group, version and kind.
func gvkExtensionValue(kinds ...schema.GroupVersionKind) []interface{} {
	out := make([]interface{}, 0, len(kinds))
	for _, gvk := range kinds {
		out = append(out, map[string]interface{}{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind})
	}
	return out
}

// pruneDefaults drops default values from a v2 schema: in OpenAPI v2 a default beside a $ref is not
// allowed, and upstream publishes v2 without them (v3 keeps them).
func pruneDefaults(s *spec.Schema) *spec.Schema {
	walker := schemamutation.Walker{
		SchemaCallback: func(schema *spec.Schema) *spec.Schema {
			if schema.Default == nil {
				return schema
			}
			clone := *schema
			clone.Default = nil
			return &clone
		},
		RefCallback: schemamutation.RefCallbackNoop,
	}
	return walker.WalkSchema(s)
}

// closure returns the names reachable from roots through definition dependencies, roots included.
func (d *definitionSet) closure(roots []string) ([]string, error) {
	seen := map[string]bool{}
	stack := append([]string(nil), roots...)
	for len(stack) > 0 {
		name := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[name] {
			continue
		}
		if _, ok := d.v2[name]; !ok {
			return nil, fmt.Errorf("no OpenAPI definition named %q", name)
		}
		seen[name] = true
		stack = append(stack, d.dependencies[name]...)
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}
