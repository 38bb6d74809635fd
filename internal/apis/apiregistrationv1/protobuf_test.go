package apiregistrationv1

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

func readGolden(t *testing.T) (*APIServiceList, []byte) {
	t.Helper()
	js, err := os.ReadFile(filepath.Join("testdata", "apiservices.json"))
	if err != nil {
		t.Fatal(err)
	}
	var list APIServiceList
	if err := json.Unmarshal(js, &list); err != nil {
		t.Fatal(err)
	}
	pb, err := os.ReadFile(filepath.Join("testdata", "apiservice-upstream.pb"))
	if err != nil {
		t.Fatal(err)
	}
	return &list, pb
}

// TestProtobufMatchesUpstream: a list of a remote APIService using every field and a local one
// encodes to exactly the bytes upstream's generated code wrote for it, and those bytes decode to
// the same list.
func TestProtobufMatchesUpstream(t *testing.T) {
	list, upstream := readGolden(t)
	got, err := list.Marshal()
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
	var back APIServiceList
	if err := back.Unmarshal(upstream); err != nil {
		t.Fatal(err)
	}
	back.TypeMeta = list.TypeMeta // the envelope carries it, not the message
	if !reflect.DeepEqual(list, &back) {
		want, _ := json.Marshal(list)
		have, _ := json.Marshal(&back)
		t.Fatalf("decoded upstream bytes differ:\nwant %s\ngot  %s", want, have)
	}
}

// TestProtobufSerializer: the APIService goes through apimachinery's protobuf serializer (the
// one the API server and the conformance framework's client use) and back unchanged.
func TestProtobufSerializer(t *testing.T) {
	list, _ := readGolden(t)
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	s := protobuf.NewSerializer(scheme, scheme)
	in := list.Items[0].DeepCopy()
	in.TypeMeta.APIVersion, in.TypeMeta.Kind = SchemeGroupVersion.String(), "APIService"
	var buf bytes.Buffer
	if err := s.Encode(in, &buf); err != nil {
		t.Fatal(err)
	}
	out, _, err := s.Decode(buf.Bytes(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip changed the APIService:\nin  %#v\nout %#v", in, out)
	}
}

// TestProtobufMalformed: truncated bytes are an error, never a panic.
func TestProtobufMalformed(t *testing.T) {
	_, upstream := readGolden(t)
	for _, n := range []int{1, 7, len(upstream) / 2, len(upstream) - 1} {
		var l APIServiceList
		if err := l.Unmarshal(upstream[:n]); err == nil {
			t.Errorf("%d of %d bytes decoded without an error", n, len(upstream))
		}
	}
}
