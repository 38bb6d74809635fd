package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/skiff-sh/skiff/internal/authz/bootstrappolicy"
	"github.com/skiff-sh/skiff/internal/cloudprovider"
	"github.com/skiff-sh/skiff/internal/cloudprovider/local"
	"github.com/skiff-sh/skiff/internal/controller/cloudmanager"
)

// cloudProviders are the built-in cloud providers (a second one is one Register call here).
func cloudProviders() (*cloudprovider.Registry, error) {
	r := &cloudprovider.Registry{}
	if err := local.Register(r); err != nil {
		return nil, err
	}
	return r, nil
}

func validateCloudProvider(name string) error {
	r, err := cloudProviders()
	if err != nil {
		return err
	}
	if !r.Has(name) {
		return fmt.Errorf("--cloud-provider %q: known providers are %v and %s", name, r.Names(), cloudprovider.None)
	}
	return nil
}

// runCloudControllerManager runs the cloud controller manager (its own identity, its own Lease)
// until ctx ends, campaigning again whenever the Lease is lost.
func runCloudControllerManager(ctx context.Context, cfg *Config, now time.Time) error {
	if cfg.CloudProvider == cloudprovider.None {
		return nil
	}
	restCfg, err := componentRESTConfig(cfg, bootstrappolicy.CloudControllerManager, nil, now)
	if err != nil {
		return err
	}
	fence := fenced(restCfg)
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("cloud controller manager client: %w", err)
	}
	registry, err := cloudProviders()
	if err != nil {
		return err
	}
	for {
		err := cloudmanager.Run(ctx, cloudmanager.Config{
			Client: client, Registry: registry, Provider: cfg.CloudProvider, Fence: fence,
			Identity:      cfg.NodeName + "_" + fmt.Sprint(os.Getpid()),
			LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
			Logger: cfg.Logger.With("component", "cloud-controller-manager"),
		})
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && !errors.Is(err, cloudmanager.ErrLeaderElectionLost) {
			return fmt.Errorf("cloud controller manager: %w", err)
		}
		cfg.Logger.Warn("cloud controller manager lost its lease; campaigning again")
	}
}
