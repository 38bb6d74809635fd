package cluster

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/builtin"
	"github.com/skiff-sh/skiff/internal/registry/core"
	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/computed"
	"github.com/skiff-sh/skiff/internal/storage/etcd3"
)

// componentStatusesResource is the computed core/v1 resource served without storage.
var componentStatusesResource = schema.GroupResource{Resource: "componentstatuses"}

// componentProbeTimeout bounds each probe, so a hung etcd answers Unhealthy instead of hanging
// `kubectl get cs`.
const componentProbeTimeout = 2 * time.Second

// newComponentStatusStore computes componentstatuses on every read: etcd is healthy when it answers
// a read, the scheduler and controller manager when their leader's Lease is fresh (they serve no
// healthz port that every API server could reach).
func newComponentStatusStore(client *clientv3.Client, scheme *runtime.Scheme, resources []*registry.Resource, encoding string, clk clock.PassiveClock) (storage.Interface, error) {
	var leaseRes *registry.Resource
	for _, r := range resources {
		if r.GroupResource() == (schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}) {
			leaseRes = r
		}
	}
	if leaseRes == nil {
		return nil, fmt.Errorf("componentstatuses: leases are not served")
	}
	codec, err := builtin.StorageCodec(scheme, leaseRes, encoding)
	if err != nil {
		return nil, fmt.Errorf("componentstatuses: lease codec: %w", err)
	}
	leases := etcd3.New(client, codec, leaseRes.New, leaseRes.NewList)
	etcdHealthy := func(ctx context.Context) error {
		_, err := client.Get(ctx, "/registry/health")
		return err
	}
	leader := func(ctx context.Context, component, leaseName string) core.ComponentHealth {
		ctx, cancel := context.WithTimeout(ctx, componentProbeTimeout)
		defer cancel()
		lease := &coordinationv1.Lease{}
		err := leases.Get(ctx, "/registry/coordination.k8s.io/leases/kube-system/"+leaseName, storage.GetOptions{}, lease)
		if err != nil {
			lease = nil
		}
		return core.LeaderHealth(component, lease, err, clk.Now())
	}
	list := func(ctx context.Context) ([]runtime.Object, error) {
		probeCtx, cancel := context.WithTimeout(ctx, componentProbeTimeout)
		defer cancel()
		etcd := core.ComponentHealth{Name: core.ComponentEtcd, Message: "ok"}
		if err := etcdHealthy(probeCtx); err != nil {
			etcd = core.ComponentHealth{Name: core.ComponentEtcd, Err: err}
		}
		// Kubernetes lists the scheduler, the controller manager, then the etcd members.
		return []runtime.Object{
			core.ComponentStatus(leader(ctx, core.ComponentScheduler, "kube-scheduler")),
			core.ComponentStatus(leader(ctx, core.ComponentControllerManager, "kube-controller-manager")),
			core.ComponentStatus(etcd),
		}, nil
	}
	return computed.New(list, etcdHealthy), nil
}
