package clusterroleaggregation

import (
	"context"
	"fmt"
	"reflect"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "clusterrole-aggregation"

// Controller aggregates ClusterRoles.
type Controller struct {
	client kubernetes.Interface
	lister rbaclisters.ClusterRoleLister
	loop   *ctrlutil.Loop
	synced []cache.InformerSynced
}

// New builds the controller.
func New(deps ctrlutil.Deps) (*Controller, error) {
	inf := deps.Informers.Rbac().V1().ClusterRoles()
	c := &Controller{client: deps.Client, lister: inf.Lister(), synced: []cache.InformerSynced{inf.Informer().HasSynced}}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	// Any change to any ClusterRole may change what an aggregated role selects: requeue them all.
	enqueueAggregated := func(any) {
		roles, err := c.lister.List(labels.Everything())
		if err != nil {
			return
		}
		for _, r := range roles {
			if r.AggregationRule != nil {
				c.loop.Queue.Add(r.Name)
			}
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueAggregated, UpdateFunc: func(_, o any) { enqueueAggregated(o) }, DeleteFunc: enqueueAggregated,
	}); err != nil {
		return nil, fmt.Errorf("clusterrole informer handler: %w", err)
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced...) }

// Sync writes the aggregated rules of the ClusterRole named key.
func (c *Controller) Sync(ctx context.Context, key string) error {
	role, err := c.lister.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if role.AggregationRule == nil {
		return nil
	}
	all, err := c.lister.List(labels.Everything())
	if err != nil {
		return err
	}
	rules, err := AggregatedRules(role, all)
	if err != nil {
		return err
	}
	if reflect.DeepEqual(rules, role.Rules) || (len(rules) == 0 && len(role.Rules) == 0) {
		return nil
	}
	updated := role.DeepCopy()
	updated.Rules = rules
	if _, err := c.client.RbacV1().ClusterRoles().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update aggregated clusterrole %s: %w", key, err)
	}
	return nil
}

// AggregatedRules is the union, without duplicates, of the rules of every other ClusterRole that
// one of role's selectors matches, in the order of the matching roles' names.
func AggregatedRules(role *rbacv1.ClusterRole, all []*rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	sorted := append([]*rbacv1.ClusterRole(nil), all...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var rules []rbacv1.PolicyRule
	for _, sel := range role.AggregationRule.ClusterRoleSelectors {
		selector, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil {
			return nil, fmt.Errorf("clusterrole %s: aggregation selector: %w", role.Name, err)
		}
		for _, other := range sorted {
			if other.Name == role.Name || !selector.Matches(labels.Set(other.Labels)) {
				continue
			}
			for _, r := range other.Rules {
				if !contains(rules, r) {
					rules = append(rules, r)
				}
			}
		}
	}
	return rules, nil
}

func contains(rules []rbacv1.PolicyRule, r rbacv1.PolicyRule) bool {
	for _, have := range rules {
		if reflect.DeepEqual(have, r) {
			return true
		}
	}
	return false
}
