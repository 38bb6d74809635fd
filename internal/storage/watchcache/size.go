package watchcache

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// objectSize estimates the memory an object holds, for the history's byte bound: the protobuf
// size of built-in types (their generated Size walks the object without encoding it), a walk of
// the fields of unstructured ones (custom resources), and a flat guess for anything else. Only
// the order of magnitude matters.
func objectSize(obj runtime.Object) int64 {
	switch o := obj.(type) {
	case interface{ Size() int }:
		return int64(o.Size())
	case *unstructured.Unstructured:
		return valueSize(o.Object)
	default:
		return 1024
	}
}

// valueSize estimates the bytes of a JSON-like value.
func valueSize(v any) int64 {
	switch t := v.(type) {
	case map[string]any:
		var n int64
		for k, e := range t {
			n += int64(len(k)) + valueSize(e)
		}
		return n
	case []any:
		var n int64
		for _, e := range t {
			n += valueSize(e)
		}
		return n
	case string:
		return int64(len(t))
	default:
		return 8
	}
}
