package version

import (
	apiversion "k8s.io/apimachinery/pkg/version"
)

const (
	// Major and Minor are the Kubernetes version whose API skiff serves; kubectl compares its own
	// minor version with Minor and warns when they are more than one apart.
	Major = "1"
	Minor = "33"
	// GitVersion is what /version, `skiff version` and the kubelet report. The "+skiff" is build
	// metadata, which semantic-version comparisons (Helm's kubeVersion, client feature gates)
	// ignore, where a "-skiff" pre-release suffix would sort below v1.33.0.
	GitVersion = "v" + Major + "." + Minor + ".0+skiff"
	// buildDate is fixed: the binary is built reproducibly and says nothing of when.
	buildDate = "2026-11-21T00:00:00Z"
)

// Info is the /version document.
func Info() apiversion.Info {
	return apiversion.Info{
		Major: Major, Minor: Minor, GitVersion: GitVersion, GitTreeState: "clean",
		BuildDate: buildDate, GoVersion: "go1.26", Compiler: "gc", Platform: "linux/amd64",
	}
}

// ProbeUserAgent is the User-Agent of the kubelet's HTTP probes, as upstream's
// "kube-probe/<major>.<minor>".
func ProbeUserAgent() string { return "kube-probe/" + Major + "." + Minor }
