// Writes the protobuf bytes upstream's generated code (k8s.io/kube-aggregator v0.33.13, the
// conformance version) produces for apiservices.json: the golden file of protobuf_test.go. Run once
// by hand, outside skiff's module (this directory is its own module, ignored by ./...):
//
//	cd testdata/upstream && GOFLAGS=-mod=mod go run . ../apiservices.json ../apiservice-upstream.pb >/dev/null

package main

import (
	"encoding/json"
	"os"

	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

func main() {
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	var list apiregv1.APIServiceList
	if err := json.Unmarshal(data, &list); err != nil {
		panic(err)
	}
	out, err := list.Marshal()
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile(os.Args[2], out, 0o644); err != nil {
		panic(err)
	}
	// And back: upstream's decoding of the same bytes, as JSON.
	var back apiregv1.APIServiceList
	if err := back.Unmarshal(out); err != nil {
		panic(err)
	}
	js, _ := json.Marshal(&back)
	os.Stdout.Write(js)
}
