package storage

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/recognizer"
	"k8s.io/apimachinery/pkg/runtime/serializer/versioning"
)

// Stored encodings accepted by NewCodec.
const (
	EncodingJSON     = "json"
	EncodingProtobuf = "protobuf"
	// DefaultEncoding is chosen by measurement; see ENCODING.md.
	DefaultEncoding = EncodingProtobuf
)

// NewCodec returns the codec objects of group version gv are stored with. encoding picks what is
// written ("json" or "protobuf", "" for DefaultEncoding); reading accepts both, so a cluster can
// switch encodings without rewriting its data. Decoded objects are defaulted by scheme, as
// Kubernetes does when it reads storage, so fields added later get their defaults.
func NewCodec(scheme *runtime.Scheme, gv schema.GroupVersion, encoding string) (runtime.Codec, error) {
	if scheme == nil {
		return nil, fmt.Errorf("storage codec for %s: nil scheme", gv)
	}
	jsonSerializer := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{})
	protobufSerializer := protobuf.NewSerializer(scheme, scheme)
	var encoder runtime.Encoder
	switch encoding {
	case EncodingJSON:
		encoder = jsonSerializer
	case EncodingProtobuf, "":
		encoder = protobufSerializer
	default:
		return nil, fmt.Errorf("storage codec for %s: unknown encoding %q (want %q or %q)", gv, encoding, EncodingJSON, EncodingProtobuf)
	}
	decoder := recognizer.NewDecoder(protobufSerializer, jsonSerializer)
	return versioning.NewCodec(encoder, decoder, runtime.UnsafeObjectConvertor(scheme), scheme, scheme, scheme,
		gv, gv, scheme.Name()), nil
}
