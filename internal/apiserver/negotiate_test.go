package apiserver

import (
	"testing"
)

func TestNegotiateOutput(t *testing.T) {
	s := newStorelessServer(t)
	serializers := s.codecs.SupportedMediaTypes()
	const (
		tableV1      = "application/json;as=Table;v=v1;g=meta.k8s.io"
		tableV1beta1 = "application/json;as=Table;v=v1beta1;g=meta.k8s.io"
		partial      = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
		partialList  = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
		protobuf     = "application/vnd.kubernetes.protobuf"
	)
	tests := []struct {
		name      string
		accept    string
		wantList  bool
		wantType  string
		wantKind  outputKind
		wantError bool
	}{
		{name: "empty is JSON", accept: "", wantType: "application/json"},
		{name: "JSON", accept: "application/json", wantType: "application/json"},
		{name: "star star", accept: "*/*", wantType: "application/json"},
		{name: "application star", accept: "application/*", wantType: "application/json"},
		{name: "YAML", accept: "application/yaml", wantType: "application/yaml"},
		{name: "protobuf", accept: protobuf, wantType: protobuf},
		{name: "protobuf with JSON fallback", accept: protobuf + ", application/json", wantType: protobuf},
		{name: "first acceptable entry wins", accept: "text/html, application/yaml, application/json", wantType: "application/yaml"},
		{name: "Table v1", accept: tableV1 + ",application/json", wantType: "application/json", wantKind: outputTable},
		{name: "Table v1beta1", accept: tableV1beta1, wantType: "application/json", wantKind: outputTable},
		{name: "Table of a list", accept: tableV1, wantList: true, wantType: "application/json", wantKind: outputTable},
		{name: "Table in protobuf", accept: "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", wantType: protobuf, wantKind: outputTable},
		{name: "Table of another group falls back", accept: "application/json;as=Table;v=v1;g=example.com, application/yaml", wantType: "application/yaml"},
		{name: "Table of an unknown version falls back", accept: "application/json;as=Table;v=v2;g=meta.k8s.io, application/yaml", wantType: "application/yaml"},
		{name: "unknown as falls back", accept: "application/json;as=Frobnicator;v=v1;g=meta.k8s.io, application/yaml", wantType: "application/yaml"},
		{name: "PartialObjectMetadata of an object", accept: partial, wantType: "application/json", wantKind: outputPartialMetadata},
		{name: "PartialObjectMetadataList of a list", accept: partialList, wantList: true, wantType: "application/json", wantKind: outputPartialMetadataList},
		{name: "PartialObjectMetadata of a list falls back", accept: partial + ", application/json", wantList: true, wantType: "application/json"},
		{name: "PartialObjectMetadataList of an object falls back", accept: partialList + ", application/json", wantType: "application/json"},
		{name: "metadata client list", accept: "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json", wantList: true, wantType: protobuf, wantKind: outputPartialMetadataList},
		{name: "PartialObjectMetadataList only, for an object", accept: partialList, wantError: true},
		{name: "unknown media type", accept: "text/html", wantError: true},
		{name: "malformed", accept: "application/json;;;=", wantError: true},
		{name: "only unsupported Table", accept: "application/json;as=Table;v=v1;g=example.com", wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := negotiateOutput(tt.accept, serializers, tt.wantList)
			if tt.wantError {
				if err == nil {
					t.Fatalf("negotiateOutput(%q) = %s, want an error", tt.accept, got.info.MediaType)
				}
				return
			}
			if err != nil {
				t.Fatalf("negotiateOutput(%q): %v", tt.accept, err)
			}
			if got.info.MediaType != tt.wantType || got.kind != tt.wantKind {
				t.Errorf("negotiateOutput(%q) = %s kind %d, want %s kind %d", tt.accept, got.info.MediaType, got.kind, tt.wantType, tt.wantKind)
			}
		})
	}
}

func TestNegotiateOutputErrorNamesAcceptedTypes(t *testing.T) {
	s := newStorelessServer(t)
	_, err := negotiateOutput("text/html", s.codecs.SupportedMediaTypes(), false)
	if err == nil {
		t.Fatal("want an error")
	}
	st := statusOf(t, notAcceptable(err))
	if st.Code != 406 || st.Reason != "NotAcceptable" {
		t.Errorf("status = %d %s, want 406 NotAcceptable", st.Code, st.Reason)
	}
	for _, mt := range []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"} {
		if !contains(st.Message, mt) {
			t.Errorf("message %q does not name %s", st.Message, mt)
		}
	}
}

func TestInputSerializer(t *testing.T) {
	s := newStorelessServer(t)
	for contentType, want := range map[string]string{
		"":                                    "application/json",
		"application/json":                    "application/json",
		"application/json; charset=utf-8":     "application/json",
		"application/yaml":                    "application/yaml",
		"application/vnd.kubernetes.protobuf": "application/vnd.kubernetes.protobuf",
		"text/plain":                          "",
		"garbage;;":                           "",
	} {
		info, ok := inputSerializer(contentType, s.codecs.SupportedMediaTypes())
		if got := info.MediaType; ok != (want != "") || got != want {
			t.Errorf("inputSerializer(%q) = %q, %v; want %q", contentType, got, ok, want)
		}
	}
}
