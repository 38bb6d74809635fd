package crds

import (
	"embed"
	"fmt"
	"path"
	"slices"

	"sigs.k8s.io/yaml"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
)

// BundleVersion is the Gateway API release of the embedded definitions (their
// gateway.networking.k8s.io/bundle-version annotation).
const BundleVersion = "v1.6.3"

// The release's config/crd/standard directory without gateway.networking.k8s.io_vap_safeupgrades.yaml,
// which is not a definition but a ValidatingAdmissionPolicy that refuses experimental-channel CRDs:
// an operator may install those on purpose.
//
//go:embed standard/*.yaml
var standard embed.FS

// Definitions decodes the embedded definitions, in file-name order. Each call returns new
// objects, so the caller may change them.
func Definitions() ([]*crdv1.CustomResourceDefinition, error) {
	entries, err := standard.ReadDir("standard")
	if err != nil {
		return nil, fmt.Errorf("gateway api definitions: %w", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	out := make([]*crdv1.CustomResourceDefinition, 0, len(names))
	for _, name := range names {
		data, err := standard.ReadFile(path.Join("standard", name))
		if err != nil {
			return nil, fmt.Errorf("gateway api definition %s: %w", name, err)
		}
		crd := &crdv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("gateway api definition %s: %w", name, err)
		}
		if crd.Kind != "CustomResourceDefinition" || crd.Spec.Group != "gateway.networking.k8s.io" {
			return nil, fmt.Errorf("gateway api definition %s: a %s of group %q, not a Gateway API CustomResourceDefinition", name, crd.Kind, crd.Spec.Group)
		}
		out = append(out, crd)
	}
	return out, nil
}
