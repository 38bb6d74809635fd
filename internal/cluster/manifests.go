package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiff-sh/skiff/internal/manifests"
)

// manifestsUser is the identity the manifests directory applies with: in system:masters, since a
// file may hold any object of any API group (RBAC included), as k3s's deploy controller runs as
// the cluster admin. The directory is writable only by root (0700 under the data dir).
const manifestsUser = "system:skiff-deploy"

// manifestsDir is the directory the control plane applies: --manifests-dir, or
// <data-dir>/manifests (k3s's <data-dir>/server/manifests).
func (c *Config) manifestsDir() string {
	if c.ManifestsDir != "" {
		return c.ManifestsDir
	}
	dir, err := filepath.Abs(c.DataDir)
	if err != nil {
		dir = c.DataDir
	}
	return filepath.Join(dir, "manifests")
}

// manifestsRole runs the auto-deployed manifests directory (internal/manifests) on a control-plane
// node; the Lease kube-system/skiff-manifests makes one node at a time apply it. The default
// directory is created empty, so an operator finds where to put files.
func (n *Node) manifestsRole() role {
	return role{name: "manifests", run: func(ctx context.Context) error {
		dir := n.cfg.manifestsDir()
		if n.cfg.ManifestsDir == "" {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return fmt.Errorf("manifests directory: %w", err)
			}
		}
		restCfg, err := n.inProcessConfig(manifestsUser, []string{"system:masters"})
		if err != nil {
			return err
		}
		fence := fenced(restCfg)
		client, err := kubernetes.NewForConfig(restCfg)
		if err != nil {
			return fmt.Errorf("manifests client: %w", err)
		}
		dyn, err := dynamic.NewForConfig(restCfg)
		if err != nil {
			return fmt.Errorf("manifests dynamic client: %w", err)
		}
		disc, err := discovery.NewDiscoveryClientForConfig(restCfg)
		if err != nil {
			return fmt.Errorf("manifests discovery client: %w", err)
		}
		return manifests.Run(ctx, manifests.Config{
			Dir: dir, Client: client, Dynamic: dyn, Discovery: disc, Fence: fence,
			Identity:      n.cfg.NodeName + "_" + fmt.Sprint(os.Getpid()),
			LeaseDuration: n.cfg.LeaseDuration, RenewDeadline: n.cfg.RenewDeadline, RetryPeriod: n.cfg.RetryPeriod,
			Logger: n.cfg.Logger.With("component", "manifests"),
		})
	}}
}

// inProcessConfig is a client configuration for a component of this node that talks only to its
// own API server: user's certificate (componentRESTConfig), carried in-process (inProcessRESTConfig).
func (n *Node) inProcessConfig(user string, groups []string) (*rest.Config, error) {
	networkCfg, err := componentRESTConfig(&n.cfg, user, groups, time.Now())
	if err != nil {
		return nil, err
	}
	return inProcessRESTConfig(networkCfg, n.api)
}
