// Package openapi builds and serves the OpenAPI documents of the served API: the single v2 document at
// /openapi/v2 (JSON and the protobuf form client-go's discovery client asks for), the v3 index at
// /openapi/v3 and one v3 document per group-version, and the managedfields.TypeConverter that
// server-side apply uses. Definitions come from the committed, generated package
// internal/openapi/generated (hack/update-openapi.sh regenerates it); paths come from the
// []*registry.Resource the server serves, so resources can be added at run time with Update; a
// resource built from a CustomResourceDefinition brings its schema (registry.ObjectHandling), published
// as com.<group reversed>.<version>.<Kind>, and gets a type converter from it.
//
// It must not import k8s.io/apiserver or any other upstream server implementation, and it does not
// route requests: the API server's HTTP layer mounts ServeV2 and ServeV3.
package openapi
