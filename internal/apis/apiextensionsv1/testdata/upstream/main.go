// Writes the protobuf bytes upstream's generated code (k8s.io/apiextensions-apiserver v0.33.13, the
// conformance version) produces for crd.json: the golden file of protobuf_test.go. Run once by hand,
// outside skiff's module (this directory is its own module, ignored by ./...):
//
//	cd testdata/upstream && GOFLAGS=-mod=mod go run . ../crd.json ../crd-upstream.pb >/dev/null

package main

import (
	"encoding/json"
	"os"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func main() {
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	var crd apiextv1.CustomResourceDefinition
	if err := json.Unmarshal(data, &crd); err != nil {
		panic(err)
	}
	out, err := crd.Marshal()
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile(os.Args[2], out, 0o644); err != nil {
		panic(err)
	}
	// And back: upstream's decoding of the same bytes, as JSON.
	var back apiextv1.CustomResourceDefinition
	if err := back.Unmarshal(out); err != nil {
		panic(err)
	}
	js, _ := json.Marshal(&back)
	os.Stdout.Write(js)
}
