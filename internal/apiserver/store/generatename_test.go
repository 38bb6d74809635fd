package store

import (
	"strings"
	"testing"

	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
)

func randomSuffix() string { return utilrand.String(nameSuffixLength) }

func TestGenerateName(t *testing.T) {
	tests := []struct {
		base       string
		wantPrefix string
	}{
		{base: "web-", wantPrefix: "web-"},
		{base: "", wantPrefix: ""},
		{base: strings.Repeat("a", 58), wantPrefix: strings.Repeat("a", 58)},
		{base: strings.Repeat("b", 100) + "-", wantPrefix: strings.Repeat("b", 58)},
	}
	for _, tt := range tests {
		seen := map[string]bool{}
		for range 20 {
			got := generateName(tt.base, randomSuffix)
			if !strings.HasPrefix(got, tt.wantPrefix) || len(got) != len(tt.wantPrefix)+5 {
				t.Fatalf("generateName(%q) = %q, want %q + 5 random characters", tt.base, got, tt.wantPrefix)
			}
			if len(got) > validation.DNS1123LabelMaxLength {
				t.Fatalf("generateName(%q) = %q is longer than 63", tt.base, got)
			}
			if tt.base == "web-" {
				if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
					t.Fatalf("generateName(%q) = %q is not a DNS label: %v", tt.base, got, errs)
				}
			}
			seen[got] = true
		}
		if len(seen) < 15 {
			t.Errorf("generateName(%q) gave only %d distinct names in 20 calls", tt.base, len(seen))
		}
	}
}
