package openapi

import (
	"bytes"
	"crypto/sha512"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	openapiv3 "github.com/google/gnostic-models/openapiv3"
	"github.com/munnerz/goautoneg"
	"google.golang.org/protobuf/proto"
)

// Media types of the documents. The "@" forms are what client-go sends; the "." forms are what
// upstream answers with (and also accepts).
const (
	mediaV2Protobuf           = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	mediaV2ProtobufDeprecated = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	mediaV3Protobuf           = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
	mediaV3ProtobufDeprecated = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"
)

// buildStamp is when a set of documents was built: their Last-Modified.
type buildStamp time.Time

// servedDocument is one serialized document with its ETag and, computed on first request, its
// protobuf form.
type servedDocument struct {
	json     []byte
	hash     string // upper-case hex SHA-512 of json: the ETag (quoted) and the v3 ?hash value
	modified time.Time

	toProto   func([]byte) ([]byte, error)
	protoOnce sync.Once
	proto     []byte
	protoErr  error
}

func newServedDocument(jsonBytes []byte, build buildStamp, toProto func([]byte) ([]byte, error)) *servedDocument {
	return &servedDocument{
		json:     jsonBytes,
		hash:     fmt.Sprintf("%X", sha512.Sum512(jsonBytes)),
		modified: time.Time(build),
		toProto:  toProto,
	}
}

func (d *servedDocument) protobuf() ([]byte, error) {
	d.protoOnce.Do(func() {
		if d.toProto == nil {
			d.protoErr = fmt.Errorf("no protobuf form")
			return
		}
		d.proto, d.protoErr = d.toProto(d.json)
	})
	return d.proto, d.protoErr
}

func v2ToProto(jsonBytes []byte) ([]byte, error) {
	document, err := openapiv2.ParseDocument(jsonBytes)
	if err != nil {
		return nil, fmt.Errorf("parse openapi v2 for protobuf: %w", err)
	}
	return proto.Marshal(document)
}

func v3ToProto(jsonBytes []byte) ([]byte, error) {
	document, err := openapiv3.ParseDocument(jsonBytes)
	if err != nil {
		return nil, fmt.Errorf("parse openapi v3 for protobuf: %w", err)
	}
	return proto.Marshal(document)
}

// representation is one form a document can be served in.
type representation struct {
	mediaType   string // as matched against Accept
	contentType string // as answered
	protobuf    bool
}

// negotiate picks the first representation the Accept header allows, in the client's order of
// preference; an empty Accept takes JSON.
func negotiate(accept string, offered []representation) (representation, bool) {
	if strings.TrimSpace(accept) == "" {
		accept = "*/*"
	}
	for _, clause := range goautoneg.ParseAccept(accept) {
		for _, candidate := range offered {
			typ, sub, _ := strings.Cut(candidate.mediaType, "/")
			if (clause.Type == typ || clause.Type == "*") && (clause.SubType == sub || clause.SubType == "*") {
				return candidate, true
			}
		}
	}
	return representation{}, false
}

// writeDocument answers with doc in the negotiated form. http.ServeContent handles If-None-Match
// against the ETag and HEAD.
func writeDocument(w http.ResponseWriter, r *http.Request, doc *servedDocument, offered []representation, extra func(http.Header)) {
	w.Header().Add("Vary", "Accept")
	chosen, ok := negotiate(r.Header.Get("Accept"), offered)
	if !ok {
		http.Error(w, "none of the requested media types is available; offered: "+mediaTypes(offered), http.StatusNotAcceptable)
		return
	}
	body := doc.json
	if chosen.protobuf {
		encoded, err := doc.protobuf()
		if err != nil {
			http.Error(w, "encode OpenAPI document as protobuf: "+err.Error(), http.StatusInternalServerError)
			return
		}
		body = encoded
	}
	w.Header().Set("Content-Type", chosen.contentType)
	w.Header().Set("Etag", strconv.Quote(doc.hash))
	if extra != nil {
		extra(w.Header())
	}
	http.ServeContent(w, r, "", doc.modified, bytes.NewReader(body))
}

func mediaTypes(offered []representation) string {
	names := make([]string, 0, len(offered))
	for _, o := range offered {
		names = append(names, o.mediaType)
	}
	return strings.Join(names, ", ")
}

var (
	// Pure lookup tables of the forms each document is offered in.
	v2Representations = []representation{
		{mediaType: "application/json", contentType: "application/json"},
		{mediaType: mediaV2ProtobufDeprecated, contentType: mediaV2Protobuf, protobuf: true},
		{mediaType: mediaV2Protobuf, contentType: mediaV2Protobuf, protobuf: true},
	}
	v3Representations = []representation{
		{mediaType: "application/json", contentType: "application/json"},
		{mediaType: mediaV3ProtobufDeprecated, contentType: mediaV3Protobuf, protobuf: true},
		{mediaType: mediaV3Protobuf, contentType: mediaV3Protobuf, protobuf: true},
	}
	jsonOnly = []representation{{mediaType: "application/json", contentType: "application/json"}}
)
