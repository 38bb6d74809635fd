package apiserver

import (
	"strings"
	"testing"

	"github.com/skiff-sh/skiff/internal/apiserver/admission/defaulttolerationseconds"
)

// TestDefaultAdmission: the built-in chain is Kubernetes' order, and its DefaultTolerationSeconds
// tolerates kube-apiserver's default 300 s.
func TestDefaultAdmission(t *testing.T) {
	chain := DefaultAdmission()
	var names []string
	for _, p := range chain {
		names = append(names, p.Name())
	}
	if got, want := strings.Join(names, ","), "NamespaceLifecycle,ServiceAccount,DefaultTolerationSeconds,Priority,RuntimeClass,DefaultStorageClass"; got != want {
		t.Errorf("DefaultAdmission = %s, want %s", got, want)
	}
	if d := chain[2].(defaulttolerationseconds.Plugin); d.NotReady != 300 || d.Unreachable != 300 {
		t.Errorf("DefaultAdmission's DefaultTolerationSeconds = %+v, want 300 s each", d)
	}
}
