package queryparam

import (
	"net/url"
	"strings"
)

// Bool is a boolean query parameter as Kubernetes converts one: absent is false; present, it is
// false only when its first value is "0" or "false" in any case, and true otherwise, even when empty
// ("?watch" and "?watch=" are watches; the Python client sends "True").
func Bool(q url.Values, name string) bool {
	vs, ok := q[name]
	if !ok || len(vs) == 0 {
		return false
	}
	return vs[0] != "0" && !strings.EqualFold(vs[0], "false")
}

// OptionalBool is Bool for a parameter whose absence means something else than false (such as
// sendInitialEvents): nil when absent.
func OptionalBool(q url.Values, name string) *bool {
	if _, ok := q[name]; !ok {
		return nil
	}
	b := Bool(q, name)
	return &b
}

// AnyBool is true when any of names is a true Bool (the kubelet accepts its own parameter names and
// kubectl's, e.g. "output" and "stdout").
func AnyBool(q url.Values, names ...string) bool {
	for _, n := range names {
		if Bool(q, n) {
			return true
		}
	}
	return false
}
