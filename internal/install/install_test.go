package install

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skiff-sh/skiff/internal/kubelet/containerd"
)

func TestUnitFile(t *testing.T) {
	unit := UnitFile("/usr/local/bin/skiff", []string{"--data-dir", "/var/lib/skiff", "--node-name", "a b", "--token", "K10x::id.s$cret"})
	for _, want := range []string{
		`ExecStart=/usr/local/bin/skiff server --data-dir /var/lib/skiff --node-name "a b" --token "K10x::id.s$$cret"`,
		"KillMode=process", "Delegate=yes", "Restart=always", "WantedBy=multi-user.target",
	} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}
}

func TestPlanUninstall(t *testing.T) {
	dataDir := "/var/lib/sk node"
	ccfg := containerd.Config{DataDir: filepath.Join(dataDir, "kubelet")}.WithDefaults()
	mountinfo := strings.Join([]string{
		`22 1 0:21 / /proc rw - proc proc rw`,
		`90 30 0:50 / /var/lib/sk\040node/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/cache rw - tmpfs tmpfs rw`,
		`91 30 0:51 / /var/lib/sk\040node/kubelet/containerd/state/io.containerd.runtime.v2.task/k8s.io/abc/rootfs rw - overlay overlay rw`,
		`92 30 0:52 / /var/lib/sk\040node rw - tmpfs tmpfs rw`,
		`93 30 0:53 / /var/lib/sk\040node2/x rw - tmpfs tmpfs rw`,
	}, "\n")
	procs := map[int]string{
		1:   "/sbin/init",
		200: "containerd --config " + ccfg.ConfigPath(),
		201: "/usr/bin/containerd-shim-runc-v2 -namespace k8s.io -id abc -address " + ccfg.Address,
		300: "containerd --config /var/lib/other/kubelet/containerd/config.toml",
	}
	plan := PlanUninstall(UninstallOptions{DataDir: dataDir, BinDir: "/usr/local/bin", UnitDir: "/etc/systemd/system"}, mountinfo, procs)
	if got := plan.Processes; len(got) != 2 || got[0] != 200 || got[1] != 201 {
		t.Errorf("processes %v, want this node's containerd and shim only", got)
	}
	if len(plan.Mounts) != 3 || plan.Mounts[len(plan.Mounts)-1] != dataDir {
		t.Errorf("mounts %q: want the three under the data dir, the data dir's own last", plan.Mounts)
	}
	if plan.ProxyPrefix == "" || plan.ProxyDevice == "" {
		t.Errorf("plan %+v", plan)
	}
	// Containers of either OCI runtime (--oci-runtime) are killed with that runtime.
	if want := []RuntimeRoot{{"runc", ccfg.RuncRoot()}, {"crun", ccfg.RuntimeRoot("crun")}}; !slices.Equal(plan.RuntimeRoots, want) {
		t.Errorf("runtime roots %+v, want %+v", plan.RuntimeRoots, want)
	}
	if want := []string{dataDir, "/etc/systemd/system/skiff.service", "/usr/local/bin/skiff"}; strings.Join(plan.Paths, ",") != strings.Join(want, ",") {
		t.Errorf("paths %q, want %q", plan.Paths, want)
	}
}
