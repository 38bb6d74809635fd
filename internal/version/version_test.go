package version

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

// TestGitVersionMatchesMinor: the three ways skiff names its version agree, and GitVersion parses
// as a semantic version that is not a pre-release (so ">= 1.33.0" constraints hold).
func TestGitVersionMatchesMinor(t *testing.T) {
	v, err := version.ParseSemantic(GitVersion)
	if err != nil {
		t.Fatalf("GitVersion %q: %v", GitVersion, err)
	}
	if got := v.String(); !strings.HasPrefix(got, Major+"."+Minor+".") {
		t.Errorf("GitVersion %q is not %s.%s", GitVersion, Major, Minor)
	}
	if v.PreRelease() != "" {
		t.Errorf("GitVersion %q is a pre-release (%q): it sorts below %s.%s.0", GitVersion, v.PreRelease(), Major, Minor)
	}
	if !v.AtLeast(version.MustParseSemantic("v1.33.0")) {
		t.Errorf("GitVersion %q is below v1.33.0", GitVersion)
	}
	if info := Info(); info.GitVersion != GitVersion || info.Minor != Minor || info.Major != Major {
		t.Errorf("Info() = %+v", info)
	}
	if ua := ProbeUserAgent(); ua != "kube-probe/1.33" {
		t.Errorf("ProbeUserAgent() = %q", ua)
	}
}
