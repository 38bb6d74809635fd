package manager

import (
	"time"

	"github.com/skiff-sh/skiff/internal/controller/attachdetach"
	"github.com/skiff-sh/skiff/internal/controller/clusterroleaggregation"
	"github.com/skiff-sh/skiff/internal/controller/cronjob"
	"github.com/skiff-sh/skiff/internal/controller/csrapproving"
	"github.com/skiff-sh/skiff/internal/controller/csrcleaner"
	"github.com/skiff-sh/skiff/internal/controller/csrsigning"
	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
	"github.com/skiff-sh/skiff/internal/controller/daemonset"
	"github.com/skiff-sh/skiff/internal/controller/deployment"
	"github.com/skiff-sh/skiff/internal/controller/disruption"
	"github.com/skiff-sh/skiff/internal/controller/dnsendpoints"
	"github.com/skiff-sh/skiff/internal/controller/endpoint"
	"github.com/skiff-sh/skiff/internal/controller/endpointslice"
	"github.com/skiff-sh/skiff/internal/controller/endpointslicemirroring"
	"github.com/skiff-sh/skiff/internal/controller/ephemeral"
	"github.com/skiff-sh/skiff/internal/controller/garbagecollector"
	"github.com/skiff-sh/skiff/internal/controller/gateway"
	"github.com/skiff-sh/skiff/internal/controller/job"
	"github.com/skiff-sh/skiff/internal/controller/localpath"
	"github.com/skiff-sh/skiff/internal/controller/namespace"
	"github.com/skiff-sh/skiff/internal/controller/nodeipam"
	"github.com/skiff-sh/skiff/internal/controller/nodelifecycle"
	"github.com/skiff-sh/skiff/internal/controller/podgc"
	"github.com/skiff-sh/skiff/internal/controller/pvbinder"
	"github.com/skiff-sh/skiff/internal/controller/pvcprotection"
	"github.com/skiff-sh/skiff/internal/controller/pvprotection"
	"github.com/skiff-sh/skiff/internal/controller/replicaset"
	"github.com/skiff-sh/skiff/internal/controller/replication"
	"github.com/skiff-sh/skiff/internal/controller/resourcequota"
	"github.com/skiff-sh/skiff/internal/controller/rootcacertpublisher"
	"github.com/skiff-sh/skiff/internal/controller/serviceaccount"
	"github.com/skiff-sh/skiff/internal/controller/servicecidrs"
	"github.com/skiff-sh/skiff/internal/controller/statefulset"
	"github.com/skiff-sh/skiff/internal/controller/tokencleaner"
	"github.com/skiff-sh/skiff/internal/controller/ttlafterfinished"
	"github.com/skiff-sh/skiff/internal/controller/vacprotection"
)

// rootCAFollowEvery is how often root-ca-cert-publisher reads the CA bundle's file: a CA
// rotation's phases are minutes apart, so pods see a new bundle long before the next phase.
const rootCAFollowEvery = 10 * time.Second

// constructors maps each implemented controller to its constructor.
func constructors() map[string]constructor {
	return map[string]constructor{
		ClusterRoleAggregation: func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return clusterroleaggregation.New(deps) },
		ReplicaSet:             func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return replicaset.New(deps) },
		ReplicationController: func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) {
			return replication.New(deps)
		},
		Deployment:  func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return deployment.New(deps) },
		DaemonSet:   func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return daemonset.New(deps) },
		StatefulSet: func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return statefulset.New(deps) },
		Disruption:  func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return disruption.New(deps) },
		ResourceQuota: func(deps ctrlutil.Deps, cfg *Config) (ctrlutil.Runner, error) {
			return resourcequota.New(deps, cfg.Dynamic, ctrlutil.Discovery(cfg.Client.Discovery()))
		},
		Job:                    func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return job.New(deps) },
		CronJob:                func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return cronjob.New(deps) },
		TTLAfterFinished:       func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return ttlafterfinished.New(deps) },
		ServiceAccount:         func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return serviceaccount.New(deps) },
		PersistentVolumeBinder: func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return pvbinder.New(deps) },
		PVCProtection:          func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return pvcprotection.New(deps) },
		PVProtection:           func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return pvprotection.New(deps) },
		VACProtection:          func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return vacprotection.New(deps) },
		ServiceCIDRs:           func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return servicecidrs.New(deps) },
		AttachDetach:           func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return attachdetach.New(deps) },
		EphemeralVolume:        func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return ephemeral.New(deps) },
		LocalPathProvisioner: func(deps ctrlutil.Deps, cfg *Config) (ctrlutil.Runner, error) {
			return localpath.New(deps, localpath.Config{Dir: cfg.LocalPathDir, HelperImage: cfg.LocalPathHelperImage, Logger: deps.Log()})
		},
		RootCACertPublisher: func(deps ctrlutil.Deps, cfg *Config) (ctrlutil.Runner, error) {
			if cfg.RootCAFile != "" {
				return rootcacertpublisher.NewFollowing(deps, cfg.RootCAFile, rootCAFollowEvery)
			}
			if len(cfg.RootCA) == 0 {
				deps.Log().Warn("root-ca-cert-publisher needs the cluster CA bundle; not started")
				return nil, nil
			}
			return rootcacertpublisher.New(deps, cfg.RootCA)
		},
		CSRSigning: func(deps ctrlutil.Deps, cfg *Config) (ctrlutil.Runner, error) {
			if cfg.ClusterSigningCA == nil {
				deps.Log().Warn("csrsigning needs the cluster signing CA; not started")
				return nil, nil
			}
			return csrsigning.New(deps, csrsigning.Config{CA: cfg.ClusterSigningCA, Duration: cfg.ClusterSigningDuration, Logger: deps.Log()})
		},
		CSRApproving: func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) {
			return csrapproving.New(deps, csrapproving.Config{Logger: deps.Log()})
		},
		CSRCleaner: func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) {
			return csrcleaner.New(deps, csrcleaner.Config{Logger: deps.Log()}), nil
		},
		TokenCleaner:  func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return tokencleaner.New(deps) },
		Endpoint:      func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return endpoint.New(deps) },
		EndpointSlice: func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return endpointslice.New(deps) },
		DNSEndpoints:  func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) { return dnsendpoints.New(deps) },
		EndpointSliceMirroring: func(deps ctrlutil.Deps, _ *Config) (ctrlutil.Runner, error) {
			return endpointslicemirroring.New(deps)
		},
		PodGC: func(deps ctrlutil.Deps, cfg *Config) (ctrlutil.Runner, error) {
			return podgc.New(deps, cfg.TerminatedPodGCThreshold), nil
		},
		NodeLifecycle: func(deps ctrlutil.Deps, cfg *Config) (ctrlutil.Runner, error) {
			return nodelifecycle.New(deps, cfg.NodeMonitorGracePeriod)
		},
		NodeIPAM: func(deps ctrlutil.Deps, cfg *Config) (ctrlutil.Runner, error) {
			if cfg.ClusterCIDR == "" {
				deps.Log().Info("nodeipam needs --cluster-cidr; not started")
				return nil, nil
			}
			return nodeipam.New(deps, cfg.ClusterCIDR, cfg.NodeCIDRMaskSize)
		},
		GarbageCollector: func(deps ctrlutil.Deps, cfg *Config) (ctrlutil.Runner, error) {
			if cfg.Dynamic == nil {
				deps.Log().Warn("garbage collector needs a dynamic client; not started")
				return nil, nil
			}
			return garbagecollector.New(deps, cfg.Dynamic, ctrlutil.Discovery(cfg.Client.Discovery())), nil
		},
		HorizontalPodAutoscaling: newHorizontalPodAutoscaler,
		Gateway: func(deps ctrlutil.Deps, cfg *Config) (ctrlutil.Runner, error) {
			if cfg.GatewayAPI == nil {
				deps.Log().Warn("gateway controller needs a Gateway API client; not started")
				return nil, nil
			}
			return gateway.New(deps, gateway.Options{Client: cfg.GatewayAPI, ResyncPeriod: cfg.ResyncPeriod})
		},
		Namespace: func(deps ctrlutil.Deps, cfg *Config) (ctrlutil.Runner, error) {
			if cfg.Dynamic == nil {
				deps.Log().Warn("namespace controller needs a dynamic client; not started")
				return nil, nil
			}
			return namespace.New(deps, cfg.Dynamic, ctrlutil.Discovery(cfg.Client.Discovery()))
		},
	}
}
