package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCNIPluginSkipsHeavyInits runs the skiff binary as containerd runs its CNI plugin (a link
// named skiff-bridge, the CNI environment, the config on stdin) and checks, with Go's init
// trace, that the exec answers without initializing the rest of skiff: the Kubernetes scheme and
// etcd's server packages are what made an exec of the binary cost 16-26 ms of CPU.
func TestCNIPluginSkipsHeavyInits(t *testing.T) {
	plugin := filepath.Join(t.TempDir(), "skiff-bridge")
	if err := os.Symlink(skiffBinary, plugin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(plugin)
	cmd.Env = []string{"CNI_COMMAND=VERSION", "GODEBUG=inittrace=1"}
	cmd.Stdin = strings.NewReader(`{"cniVersion":"1.0.0"}`)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("plugin VERSION: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	var version struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &version); err != nil || len(version.SupportedVersions) == 0 {
		t.Fatalf("VERSION answer %q: %v", stdout.String(), err)
	}
	for _, heavy := range []string{"init k8s.io/client-go/kubernetes/scheme ", "init go.etcd.io/etcd/server/v3/auth ", "init go.etcd.io/etcd/server/v3/embed ", "init github.com/skiff-sh/skiff/internal/cluster "} {
		if strings.Contains(stderr.String(), heavy) {
			t.Errorf("the plugin exec initialized %q; cniexec must run before it", strings.TrimSpace(heavy))
		}
	}
	if !strings.Contains(stderr.String(), "init github.com/vishvananda/netlink") {
		t.Errorf("no init trace of the plugin's own dependencies (GODEBUG=inittrace=1 ignored?):\n%s", stderr.String())
	}
	// As skiff itself, the same binary initializes everything.
	out, err := exec.Command("env", "GODEBUG=inittrace=1", skiffBinary, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "init k8s.io/client-go/kubernetes/scheme ") {
		t.Errorf("skiff version: %v; scheme initialized: %v", err, strings.Contains(string(out), "init k8s.io/client-go/kubernetes/scheme "))
	}
}
