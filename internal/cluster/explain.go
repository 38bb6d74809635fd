package cluster

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	explainv1 "github.com/skiff-sh/skiff/internal/apis/schedulingexplainv1alpha1"
	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/scheduler"
	"github.com/skiff-sh/skiff/internal/scheduler/framework"
)

// explainerSlot is the API server's PodSchedulingExplanation backend: empty (503) until the
// explainer role has synced its caches, then the scheduler's Explainer over them.
type explainerSlot struct {
	current atomic.Pointer[scheduler.Explainer]
}

var _ registry.SchedulingExplainer = &explainerSlot{}

// Explain answers with the current explainer, or 503 while there is none.
func (s *explainerSlot) Explain(ctx context.Context, namespace, name string, nodeNames []string) (explainv1.PodSchedulingExplanationStatus, error) {
	e := s.current.Load()
	if e == nil {
		return explainv1.PodSchedulingExplanationStatus{}, apierrors.NewServiceUnavailable("the scheduling explainer's caches are not synced yet")
	}
	return e.Explain(ctx, namespace, name, nodeNames)
}

// schedulingExplainerRole evaluates PodSchedulingExplanations on this API server with the
// profiles of --scheduler-config (the control plane's scheduler configuration), over nodes and
// pods read from the API server's watch cache in process where it can.
func (n *Node) schedulingExplainerRole() role {
	return role{name: "scheduling explainer", run: func(ctx context.Context) error {
		defer n.explainer.current.Store(nil)
		var conf *framework.Configuration
		if n.cfg.SchedulerConfig != "" {
			var err error
			if conf, err = framework.LoadConfig(n.cfg.SchedulerConfig); err != nil {
				return fmt.Errorf("scheduler config: %w", err)
			}
		}
		inProcess, err := n.caches.localInformers(&n.cfg)
		if err != nil {
			return err
		}
		restCfg, err := componentRESTConfig(&n.cfg, "system:kube-scheduler", nil, time.Now())
		if err != nil {
			return err
		}
		client, err := kubernetes.NewForConfig(restCfg)
		if err != nil {
			return fmt.Errorf("scheduling explainer: %w", err)
		}
		factory := informers.NewSharedInformerFactory(client, 0)
		inProcess.Only(schedulerResources()...).Register(factory)
		explainer, err := scheduler.NewExplainer(client, factory, conf)
		if err != nil {
			return err
		}
		factory.Start(ctx.Done())
		defer factory.Shutdown()
		for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
			if !ok && ctx.Err() == nil {
				return fmt.Errorf("scheduling explainer: cache of %v did not sync", typ)
			}
		}
		if !toolscache.WaitForCacheSync(ctx.Done(), explainer.HasSynced) {
			return nil // stopping
		}
		n.explainer.current.Store(explainer)
		<-ctx.Done()
		return nil
	}}
}
