package cluster

import (
	"fmt"
	"os"

	"github.com/skiff-sh/skiff/internal/kubelet/containerd"
)

// The pod network's CNI plugins (--cni-plugin).
const (
	CNIPluginSkiff  = "skiff"
	CNIPluginBridge = "bridge"
)

// containerdForCNI is the supervised containerd's configuration for the chosen CNI plugin: with
// skiff's own, containerd's CNI bin dir links the plugin's type to this very binary.
func containerdForCNI(cfg *Config, kubeletDataDir string) (containerd.Config, error) {
	ccfg := containerd.Config{DataDir: kubeletDataDir}
	if cfg.CNIPlugin != CNIPluginSkiff || cfg.ContainerRuntimeEndpoint != "" {
		return ccfg, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return ccfg, fmt.Errorf("cni plugin: locate the skiff binary: %w", err)
	}
	ccfg.SkiffCNIBinary = exe
	return ccfg, nil
}
