package podnet

import "testing"

// TestNodeHost pins the names: a running node's routes and chain are found again by a restart and
// by skiff uninstall only if they come out the same, so a change here strands them on hosts.
func TestNodeHost(t *testing.T) {
	tests := []struct {
		prefix, dataDir string
		want            Host
	}{
		{prefix: "SKOXM7VH", dataDir: "/var/lib/skiff", want: Host{Metric: 940, Chain: "SKNOXM7VH-MASQ"}},
		{prefix: "SKYIRA3S", dataDir: "/var/lib/sk node", want: Host{Metric: 2893, Chain: "SKNYIRA3S-MASQ"}},
	}
	for _, tt := range tests {
		if got := NodeHost(tt.prefix, tt.dataDir); got != tt.want {
			t.Errorf("NodeHost(%q, %q) = %+v, want %+v", tt.prefix, tt.dataDir, got, tt.want)
		}
	}
}
