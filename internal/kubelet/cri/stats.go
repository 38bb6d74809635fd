package cri

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// StatsService reads resource usage from the runtime. It is a separate interface from Runtime so
// that runtimes (and fakes) without stats still satisfy Runtime; the kubelet asks for it with a
// type assertion.
type StatsService interface {
	// ListContainerStats returns the usage of the containers matching filter (nil for all).
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
	// ListPodSandboxStats returns the usage of the sandboxes matching filter (nil for all). Runtimes
	// that do not implement it (containerd 1.6) answer a gRPC Unimplemented error.
	ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error)
}

var _ StatsService = (*Client)(nil)

// ListContainerStats returns the usage of the containers matching filter.
func (c *Client) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	resp, err := c.runtime.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("list container stats: %w", err)
	}
	return resp.GetStats(), nil
}

// ListPodSandboxStats returns the usage of the sandboxes matching filter.
func (c *Client) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	resp, err := c.runtime.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("list pod sandbox stats: %w", err)
	}
	return resp.GetStats(), nil
}
