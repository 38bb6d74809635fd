package netnstest

import (
	"net"
	"slices"
	"strings"
	"testing"
)

// TestRunEntersTheNamespace: code under Run sees the namespace's interfaces (its loopback only),
// and the namespace goes when the test ends.
func TestRunEntersTheNamespace(t *testing.T) {
	var name string
	t.Run("inner", func(t *testing.T) {
		name = New(t, "sknt")
		MustRun(t, "ip", "-n", name, "link", "add", "sknt0", "type", "veth", "peer", "name", "sknt1")
		var names []string
		if err := Run(name, func() {
			ifs, err := net.Interfaces()
			if err != nil {
				t.Error(err)
			}
			for _, i := range ifs {
				names = append(names, i.Name)
			}
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		if strings.Join(names, ",") != "lo,sknt0,sknt1" {
			t.Errorf("interfaces in %s: %v, want lo and the veth pair made in it", name, names)
		}
	})
	if out := MustRun(t, "ip", "netns", "list"); strings.Contains(out, name) {
		t.Errorf("namespace %s outlived its test:\n%s", name, out)
	}
	if err := Run("sknt-absent-namespace", func() { t.Error("ran outside a namespace") }); err == nil {
		t.Error("Run into a missing namespace did not fail")
	}
}
