package apiserver

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// outputKind is what the client asked the response object to be turned into.
type outputKind int

const (
	outputObject outputKind = iota
	outputTable
	outputPartialMetadata
	outputPartialMetadataList
)

// mediaChoice is a negotiated response encoding.
type mediaChoice struct {
	info runtime.SerializerInfo
	kind outputKind
}

// negotiateOutput picks the response media type from the Accept header as Kubernetes does: the first
// acceptable entry wins; "as=Table" and "as=PartialObjectMetadata(List)" entries of group meta.k8s.io
// are honoured (v1 and v1beta1), others are skipped so the client's fallback entry is used.
func negotiateOutput(accept string, serializers []runtime.SerializerInfo, wantList bool) (mediaChoice, error) {
	if strings.TrimSpace(accept) == "" {
		accept = "application/json"
	}
	for _, entry := range strings.Split(accept, ",") {
		mediaType, params, err := mime.ParseMediaType(strings.TrimSpace(entry))
		if err != nil {
			continue
		}
		kind := outputObject
		if as := params["as"]; as != "" {
			if params["g"] != "meta.k8s.io" || (params["v"] != "v1" && params["v"] != "v1beta1") {
				continue
			}
			switch as {
			case "Table":
				kind = outputTable
			case "PartialObjectMetadata":
				if wantList {
					continue
				}
				kind = outputPartialMetadata
			case "PartialObjectMetadataList":
				if !wantList {
					continue
				}
				kind = outputPartialMetadataList
			default:
				continue
			}
		}
		if mediaType == "*/*" || mediaType == "application/*" {
			mediaType = "application/json"
		}
		for _, s := range serializers {
			if s.MediaType == mediaType {
				return mediaChoice{info: s, kind: kind}, nil
			}
		}
	}
	return mediaChoice{}, fmt.Errorf("only the following media types are accepted: %s", supportedMediaTypes(serializers))
}

// inputSerializer finds the decoder for a request body's Content-Type.
func inputSerializer(contentType string, serializers []runtime.SerializerInfo) (runtime.SerializerInfo, bool) {
	if contentType == "" {
		contentType = "application/json"
	}
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return runtime.SerializerInfo{}, false
	}
	for _, s := range serializers {
		if s.MediaType == mediaType {
			return s, true
		}
	}
	return runtime.SerializerInfo{}, false
}

func supportedMediaTypes(serializers []runtime.SerializerInfo) string {
	var types []string
	for _, s := range serializers {
		types = append(types, s.MediaType)
	}
	return strings.Join(types, ", ")
}

func acceptsHeader(r *http.Request) string { return r.Header.Get("Accept") }
