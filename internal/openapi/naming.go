package openapi

import (
	"reflect"
	"strings"
	"unicode"
)

// modelNamer is implemented by API types that carry their published OpenAPI name
// (k8s.io/api and k8s.io/apimachinery generate OpenAPIModelName for every type).
type modelNamer interface {
	OpenAPIModelName() string
}

// DefinitionName is the name under which Kubernetes publishes the schema of Go type t, for example
// "io.k8s.api.core.v1.Pod" for k8s.io/api/core/v1.Pod. Pointers are dereferenced.
func DefinitionName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// A method promoted from an embedded field (metav1.TypeMeta has one) names the embedded type,
	// so only a name that ends in the type's own name is trusted.
	for _, candidate := range []interface{}{reflect.Zero(t).Interface(), reflect.New(t).Interface()} {
		if namer, ok := candidate.(modelNamer); ok {
			if name := namer.OpenAPIModelName(); strings.HasSuffix(name, "."+t.Name()) {
				return name
			}
		}
	}
	return GoTypeDefinitionName(t.PkgPath(), t.Name())
}

// GoTypeDefinitionName turns a Go package path and type name into the published definition name:
// the host of the import path reversed ("k8s.io" -> "io.k8s"), then the path segments, then the type,
// joined by dots, with dashes replaced by underscores.
func GoTypeDefinitionName(pkgPath, typeName string) string {
	segments := strings.Split(pkgPath, "/")
	host := strings.Split(segments[0], ".")
	parts := make([]string, 0, len(host)+len(segments))
	for i := len(host) - 1; i >= 0; i-- {
		parts = append(parts, host[i])
	}
	parts = append(parts, segments[1:]...)
	parts = append(parts, typeName)
	return strings.ReplaceAll(strings.Join(parts, "."), "-", "_")
}

// normalizeDefinitionName accepts either a published name ("io.k8s.api.core.v1.Pod") or a Go name as
// openapi-gen writes for packages without model names ("k8s.io/api/core/v1.Pod") and returns the
// published name.
func normalizeDefinitionName(name string) string {
	slash := strings.LastIndex(name, "/")
	if slash < 0 {
		return name
	}
	dot := strings.LastIndex(name, ".")
	if dot < slash {
		return name
	}
	return GoTypeDefinitionName(name[:dot], name[dot+1:])
}

// groupOperationPrefix is the group as it appears in operation IDs: "" -> "Core", "apps" -> "Apps",
// "rbac.authorization.k8s.io" -> "RbacAuthorization", "stable.example.com" -> "StableExampleCom".
func groupOperationPrefix(group string) string {
	if group == "" {
		return "Core"
	}
	group = strings.TrimSuffix(group, ".k8s.io")
	var b strings.Builder
	for _, part := range strings.FieldsFunc(group, func(r rune) bool { return r == '.' || r == '-' }) {
		b.WriteString(upperFirst(part))
	}
	return b.String()
}

// groupTag is the operation tag of a group-version: "core_v1", "rbacAuthorization_v1".
func groupTag(group, version string) string {
	prefix := groupOperationPrefix(group)
	return lowerFirst(prefix) + "_" + version
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToLower(r[0])
	return string(r)
}
