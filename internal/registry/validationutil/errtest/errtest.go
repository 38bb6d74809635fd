// Package errtest helps registry tests assert field errors: the field path, the error type and a
// part of the detail, the three things kubectl shows a user. Test-only; production code must not
// import it.
package errtest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Want describes one expected field error; Detail is matched as a substring.
type Want struct {
	Field  string
	Type   field.ErrorType
	Detail string
}

// Check fails t unless errs is empty (want nil) or holds an error matching want.
func Check(t testing.TB, errs field.ErrorList, want *Want) {
	t.Helper()
	if want == nil {
		if len(errs) != 0 {
			t.Fatalf("want valid, got %v", errs)
		}
		return
	}
	for _, e := range errs {
		if e.Field == want.Field && e.Type == want.Type && strings.Contains(e.Detail, want.Detail) {
			return
		}
	}
	t.Fatalf("want %s %s %q, got %v", want.Field, want.Type, want.Detail, errs)
}
