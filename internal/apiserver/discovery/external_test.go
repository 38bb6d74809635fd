package discovery

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestSetExternal: extension servers' group versions appear in the legacy and aggregated
// documents (subresources under their resource), ordered by their priorities, survive an Update
// of the local resources, and a version of a local group joins that group after its own.
func TestSetExternal(t *testing.T) {
	d := New(testResources(), nil)
	server := newTestServer(t, d)
	flunders := []metav1.APIResource{
		{Name: "flunders", SingularName: "flunder", Namespaced: true, Kind: "Flunder", Verbs: []string{"get", "list"}},
		{Name: "flunders/status", Namespaced: true, Kind: "Flunder", Verbs: []string{"get"}},
	}
	d.SetExternal([]External{
		{GroupVersion: schema.GroupVersion{Group: "wardle.example.com", Version: "v1beta1"}, GroupPriority: 1000, VersionPriority: 5, Resources: flunders},
		{GroupVersion: schema.GroupVersion{Group: "wardle.example.com", Version: "v1"}, GroupPriority: 1000, VersionPriority: 15, Resources: flunders},
		{GroupVersion: schema.GroupVersion{Group: "apps", Version: "v2"}, GroupPriority: 1000, VersionPriority: 1, Resources: nil},
	})
	d.Update(testResources(), nil) // the local set changes; the external one stays

	for _, legacy := range []bool{true, false} {
		client := newClient(t, server.URL, legacy)
		groups, lists, err := client.ServerGroupsAndResources()
		if err != nil {
			t.Fatalf("legacy=%v: %v", legacy, err)
		}
		var wardle, apps *metav1.APIGroup
		for _, g := range groups {
			switch g.Name {
			case "wardle.example.com":
				wardle = g
			case "apps":
				apps = g
			}
		}
		if wardle == nil || len(wardle.Versions) != 2 || wardle.PreferredVersion.Version != "v1" || wardle.Versions[1].Version != "v1beta1" {
			t.Fatalf("legacy=%v: wardle group %+v", legacy, wardle)
		}
		if apps == nil || len(apps.Versions) != 2 || apps.PreferredVersion.Version != "v1" || apps.Versions[1].Version != "v2" {
			t.Fatalf("legacy=%v: apps group %+v", legacy, apps)
		}
		found := false
		for _, l := range lists {
			if l.GroupVersion != "wardle.example.com/v1" {
				continue
			}
			found = true
			names := map[string]bool{}
			for _, r := range l.APIResources {
				names[r.Name] = true
			}
			if !names["flunders"] || !names["flunders/status"] {
				t.Fatalf("legacy=%v: wardle resources %+v", legacy, l.APIResources)
			}
		}
		if !found {
			t.Fatalf("legacy=%v: wardle.example.com/v1 not listed", legacy)
		}
	}
	d.SetExternal(nil)
	if _, err := newClient(t, server.URL, false).ServerResourcesForGroupVersion("wardle.example.com/v1"); err == nil {
		t.Fatal("still served after SetExternal(nil)")
	}
}
