// Package plugins assembles skiff's in-tree scheduler plugins: the registry by
// name and the default profile (Kubernetes' default plugin set and weights).
package plugins

import (
	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/defaultbinder"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/defaultpreemption"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/imagelocality"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/interpodaffinity"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/nodeaffinity"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/nodename"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/nodeports"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/noderesources"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/nodeunschedulable"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/nodevolumelimits"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/podtopologyspread"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/tainttoleration"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/volumebinding"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/volumerestrictions"
)

// NewInTreeRegistry returns every built-in plugin by name.
func NewInTreeRegistry() framework.Registry {
	return framework.Registry{
		nodename.Name:                        nodename.New,
		nodeunschedulable.Name:               nodeunschedulable.New,
		noderesources.FitName:                noderesources.NewFit,
		noderesources.BalancedAllocationName: noderesources.NewBalancedAllocation,
		nodeaffinity.Name:                    nodeaffinity.New,
		tainttoleration.Name:                 tainttoleration.New,
		nodeports.Name:                       nodeports.New,
		interpodaffinity.Name:                interpodaffinity.New,
		podtopologyspread.Name:               podtopologyspread.New,
		imagelocality.Name:                   imagelocality.New,
		defaultpreemption.Name:               defaultpreemption.New,
		defaultbinder.Name:                   defaultbinder.New,
		volumebinding.Name:                   volumebinding.New,
		nodevolumelimits.Name:                nodevolumelimits.New,
		volumerestrictions.Name:              volumerestrictions.New,
	}
}

// DefaultPlugins is the multiPoint default set with Kubernetes' score weights,
// in the order Kubernetes runs them.
func DefaultPlugins() []framework.PluginRef {
	return []framework.PluginRef{
		{Name: nodeunschedulable.Name},
		{Name: nodename.Name},
		{Name: tainttoleration.Name, Weight: 3},
		{Name: nodeaffinity.Name, Weight: 2},
		{Name: nodeports.Name},
		{Name: noderesources.FitName, Weight: 1},
		{Name: volumerestrictions.Name},
		{Name: nodevolumelimits.Name},
		{Name: volumebinding.Name},
		{Name: interpodaffinity.Name, Weight: 2},
		{Name: podtopologyspread.Name, Weight: 2},
		{Name: noderesources.BalancedAllocationName, Weight: 1},
		{Name: imagelocality.Name, Weight: 1},
		{Name: defaultpreemption.Name},
		{Name: defaultbinder.Name},
	}
}
