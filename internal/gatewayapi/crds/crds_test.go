package crds

import (
	"slices"
	"testing"
)

func TestDefinitionsAreTheStandardChannel(t *testing.T) {
	defs, err := Definitions()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
		if got := d.Annotations["gateway.networking.k8s.io/bundle-version"]; got != BundleVersion {
			t.Errorf("%s: bundle-version %q, want %q", d.Name, got, BundleVersion)
		}
		if got := d.Annotations["gateway.networking.k8s.io/channel"]; got != "standard" {
			t.Errorf("%s: channel %q, want standard", d.Name, got)
		}
		if len(d.Spec.Versions) == 0 {
			t.Errorf("%s: no versions decoded", d.Name)
		}
		stored := 0
		for _, v := range d.Spec.Versions {
			if v.Storage {
				stored++
			}
			if v.Served && (v.Schema == nil || v.Schema.OpenAPIV3Schema == nil) {
				t.Errorf("%s %s: served without a schema", d.Name, v.Name)
			}
		}
		if stored != 1 {
			t.Errorf("%s: %d storage versions, want 1", d.Name, stored)
		}
	}
	for _, want := range []string{"gatewayclasses", "gateways", "httproutes", "grpcroutes", "referencegrants", "backendtlspolicies", "listenersets"} {
		if !slices.Contains(names, want+".gateway.networking.k8s.io") {
			t.Errorf("%s.gateway.networking.k8s.io missing from %v", want, names)
		}
	}
}

func TestDefinitionsAreFreshObjects(t *testing.T) {
	a, err := Definitions()
	if err != nil {
		t.Fatal(err)
	}
	a[0].Name = "changed"
	b, err := Definitions()
	if err != nil {
		t.Fatal(err)
	}
	if b[0].Name == "changed" {
		t.Fatal("a caller's change reached the next call's objects")
	}
}
