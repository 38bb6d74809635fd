package version

import (
	apiversion "k8s.io/apimachinery/pkg/version"
)

// Major and Minor are the Kubernetes version whose API skiff serves; kubectl compares its own
// minor version with Minor and warns when they are more than one apart. They are variables only
// so that a build can set them at link time (-ldflags "-X
// github.com/skiff-sh/skiff/internal/version.Minor=31"): the upgrade test builds a deliberately
// too-old binary that way, to see the skew policy refuse it. Nothing assigns them at run time.
var (
	Major = "1"
	Minor = "33"
)

// GitVersion is what /version, `skiff version` and the kubelet report. The "+skiff" is build
// metadata, which semantic-version comparisons (Helm's kubeVersion, client feature gates) ignore,
// where a "-skiff" pre-release suffix would sort below v1.33.0. It follows Major and Minor.
var GitVersion = "v" + Major + "." + Minor + ".0+skiff"

// DataFormat is the version of what skiff keeps in a data dir (etcd's keys and encodings, the pki
// and kubelet layouts). A binary starts on a data dir whose recorded format is at most its own,
// and raises the recorded format only when it migrates the data; a release that changes the format
// increments it. Format 1 is every data dir written before skiff recorded one.
const DataFormat = 1

// buildDate is fixed: the binary is built reproducibly and says nothing of when.
const buildDate = "2026-11-21T00:00:00Z"

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
