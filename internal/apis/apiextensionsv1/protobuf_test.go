package apiextensionsv1

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

func readGolden(t *testing.T) (*CustomResourceDefinition, []byte) {
	t.Helper()
	js, err := os.ReadFile(filepath.Join("testdata", "crd.json"))
	if err != nil {
		t.Fatal(err)
	}
	var crd CustomResourceDefinition
	if err := json.Unmarshal(js, &crd); err != nil {
		t.Fatal(err)
	}
	pb, err := os.ReadFile(filepath.Join("testdata", "crd-upstream.pb"))
	if err != nil {
		t.Fatal(err)
	}
	return &crd, pb
}

// TestProtobufMatchesUpstream: a definition using every field encodes to exactly the bytes
// upstream's generated code wrote for it, and those bytes decode to the same definition.
func TestProtobufMatchesUpstream(t *testing.T) {
	crd, upstream := readGolden(t)
	got, err := crd.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, upstream) {
		i := 0
		for i < len(got) && i < len(upstream) && got[i] == upstream[i] {
			i++
		}
		t.Fatalf("encoding differs from upstream's at byte %d of %d/%d", i, len(got), len(upstream))
	}
	var back CustomResourceDefinition
	if err := back.Unmarshal(upstream); err != nil {
		t.Fatal(err)
	}
	back.TypeMeta = crd.TypeMeta // the envelope carries it, not the message
	want, _ := json.Marshal(crd)
	have, _ := json.Marshal(&back)
	if !jsonEqual(t, want, have) {
		t.Fatalf("decoded upstream bytes differ:\nwant %s\ngot  %s", want, have)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

// TestProtobufRoundTrip: small and empty definitions and lists survive encoding, including the
// forms upstream's golden file does not hold (items as a list, dependencies, a webhook URL).
func TestProtobufRoundTrip(t *testing.T) {
	url := "https://conv.example.com/x"
	cases := map[string]*CustomResourceDefinition{
		"empty": {},
		"items list and dependencies": {Spec: CustomResourceDefinitionSpec{Group: "g", Versions: []CustomResourceDefinitionVersion{{
			Name: "v1", Schema: &CustomResourceValidation{OpenAPIV3Schema: &JSONSchemaProps{
				Items:             &JSONSchemaPropsOrArray{JSONSchemas: []JSONSchemaProps{{Type: "string"}, {Type: "integer"}}},
				Dependencies:      map[string]json.RawMessage{"a": json.RawMessage(`["b","c"]`), "d": json.RawMessage(`{"type":"object"}`)},
				Definitions:       map[string]JSONSchemaProps{"x": {Type: "string"}},
				ExternalDocs:      &ExternalDocumentation{Description: "d", URL: "u"},
				AdditionalItems:   &JSONSchemaPropsOrBool{Allows: false},
				PatternProperties: map[string]JSONSchemaProps{"^a": {Type: "string"}},
			}}}},
			Conversion: &CustomResourceConversion{Strategy: WebhookConverter, Webhook: &WebhookConversion{ClientConfig: &WebhookClientConfig{URL: &url}}}}},
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			data, err := in.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			var out CustomResourceDefinition
			if err := out.Unmarshal(data); err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(in)
			b, _ := json.Marshal(&out)
			if !jsonEqual(t, a, b) {
				t.Fatalf("round trip:\nin  %s\nout %s", a, b)
			}
		})
	}
}

// TestProtobufSerializer: apimachinery's protobuf serializer (what the API server negotiates for
// application/vnd.kubernetes.protobuf) encodes and decodes definitions and lists.
func TestProtobufSerializer(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	s := protobuf.NewSerializer(scheme, scheme)
	crd, _ := readGolden(t)
	list := &CustomResourceDefinitionList{Items: []CustomResourceDefinition{*crd, *crd}}
	list.ResourceVersion = "7"
	list.SetGroupVersionKind(SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	var buf bytes.Buffer
	if err := s.Encode(list, &buf); err != nil {
		t.Fatal(err)
	}
	obj, _, err := s.Decode(buf.Bytes(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	back, ok := obj.(*CustomResourceDefinitionList)
	if !ok || len(back.Items) != 2 || back.ResourceVersion != "7" || back.Items[1].Spec.Names.Kind != "Widget" {
		t.Fatalf("decoded %T %+v", obj, obj)
	}
	// Garbage is an error, never a panic.
	for _, bad := range [][]byte{{0x0a}, {0x0a, 0x05, 0x01}, {0x12, 0x02, 0x0a, 0xff}} {
		var c CustomResourceDefinition
		if err := c.Unmarshal(bad); err == nil {
			t.Errorf("%x decoded without an error", bad)
		}
	}
}
