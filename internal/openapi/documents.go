package openapi

import (
	"encoding/json"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/openapiconv"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

const documentTitle = "Kubernetes"

// v3Index is the document at /openapi/v3: one entry per group-version, pointing at its document with
// the hash (the document's ETag) so clients can cache it forever.
type v3Index struct {
	Paths map[string]v3IndexEntry `json:"paths"`
}

type v3IndexEntry struct {
	ServerRelativeURL string `json:"serverRelativeURL"`
}

// renderedDocuments are the serialized documents of one set of resources.
type renderedDocuments struct {
	v2      *servedDocument
	v3Index *servedDocument
	v3      map[string]*servedDocument // by group-version prefix, "api/v1"
}

// buildV2 assembles the single v2 document over every group-version.
func buildV2(byGV map[schema.GroupVersion]*groupVersionPaths, defs *definitionSet, infoVersion string) (*spec.Swagger, error) {
	paths := map[string]spec.PathItem{}
	roots := []string{}
	for _, gvp := range byGV {
		for path, item := range gvp.paths {
			paths[path] = item
		}
		for name := range gvp.roots {
			roots = append(roots, name)
		}
	}
	names, err := defs.closure(roots)
	if err != nil {
		return nil, err
	}
	definitions := make(spec.Definitions, len(names))
	for _, name := range names {
		definitions[name] = defs.v2[name]
	}
	swagger := &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: documentTitle, Version: infoVersion}},
		Paths:       &spec.Paths{Paths: paths},
		Definitions: definitions,
	}}
	return swagger, nil
}

// buildV3 assembles the v3 document of one group-version: its paths converted from the v2 form and
// the v3 schemas they reach.
func buildV3(gvp *groupVersionPaths, defs *definitionSet, infoVersion string) (*spec3.OpenAPI, error) {
	roots := make([]string, 0, len(gvp.roots))
	for name := range gvp.roots {
		roots = append(roots, name)
	}
	names, err := defs.closure(roots)
	if err != nil {
		return nil, err
	}
	schemas := make(map[string]*spec.Schema, len(names))
	for _, name := range names {
		schemas[name] = defs.v3[name]
	}
	return &spec3.OpenAPI{
		Version:    "3.0.0",
		Info:       &spec.Info{InfoProps: spec.InfoProps{Title: documentTitle, Version: infoVersion}},
		Paths:      openapiconv.ConvertPaths(&spec.Paths{Paths: gvp.paths}),
		Components: &spec3.Components{Schemas: schemas},
	}, nil
}

// renderPaths builds and serializes every document of the paths byGV.
func renderPaths(byGV map[schema.GroupVersion]*groupVersionPaths, defs *definitionSet, infoVersion string, build buildStamp) (*renderedDocuments, error) {
	swagger, err := buildV2(byGV, defs, infoVersion)
	if err != nil {
		return nil, fmt.Errorf("openapi v2: %w", err)
	}
	v2JSON, err := json.Marshal(swagger)
	if err != nil {
		return nil, fmt.Errorf("encode openapi v2: %w", err)
	}
	out := &renderedDocuments{
		v2: newServedDocument(v2JSON, build, v2ToProto),
		v3: make(map[string]*servedDocument, len(byGV)),
	}

	index := v3Index{Paths: make(map[string]v3IndexEntry, len(byGV))}
	gvs := make([]schema.GroupVersion, 0, len(byGV))
	for gv := range byGV {
		gvs = append(gvs, gv)
	}
	sort.Slice(gvs, func(i, j int) bool { return gvs[i].String() < gvs[j].String() })
	for _, gv := range gvs {
		doc, err := buildV3(byGV[gv], defs, infoVersion)
		if err != nil {
			return nil, fmt.Errorf("openapi v3 of %s: %w", gv, err)
		}
		encoded, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("encode openapi v3 of %s: %w", gv, err)
		}
		prefix := groupVersionPrefix(gv)
		served := newServedDocument(encoded, build, v3ToProto)
		out.v3[prefix] = served
		index.Paths[prefix] = v3IndexEntry{ServerRelativeURL: v3DocumentURL(prefix, served.hash)}
	}
	indexJSON, err := json.Marshal(index)
	if err != nil {
		return nil, fmt.Errorf("encode openapi v3 index: %w", err)
	}
	out.v3Index = newServedDocument(indexJSON, build, nil)
	return out, nil
}

// mergedV3Index is the index of docs' own documents and others' (prefix to server-relative URL);
// an own document wins a prefix both name.
func mergedV3Index(docs *renderedDocuments, others map[string]string) (*servedDocument, error) {
	index := v3Index{Paths: make(map[string]v3IndexEntry, len(docs.v3)+len(others))}
	for prefix, url := range others {
		index.Paths[prefix] = v3IndexEntry{ServerRelativeURL: url}
	}
	for prefix, doc := range docs.v3 {
		index.Paths[prefix] = v3IndexEntry{ServerRelativeURL: v3DocumentURL(prefix, doc.hash)}
	}
	encoded, err := json.Marshal(index)
	if err != nil {
		return nil, fmt.Errorf("encode openapi v3 index: %w", err)
	}
	return newServedDocument(encoded, buildStamp(docs.v3Index.modified), nil), nil
}

func v3DocumentURL(prefix, hash string) string {
	return "/openapi/v3/" + prefix + "?hash=" + hash
}
