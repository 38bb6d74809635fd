package cri

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// maxMessageSize matches what kubelets accept from runtimes (large
// ListContainers answers on busy nodes).
const maxMessageSize = 16 << 20

// Client talks CRI v1 to a runtime over gRPC.
type Client struct {
	conn    *grpc.ClientConn
	runtime runtimeapi.RuntimeServiceClient
	images  runtimeapi.ImageServiceClient
}

var _ Runtime = (*Client)(nil)

// Dial connects to a CRI endpoint: "unix:///path", or a bare socket path.
// The connection is lazy; the first call fails if nothing listens.
func Dial(endpoint string) (*Client, error) {
	target := endpoint
	if !strings.Contains(target, "://") {
		target = "unix://" + target
	}
	if !strings.HasPrefix(target, "unix://") {
		return nil, fmt.Errorf("cri endpoint %q: only unix sockets are supported", endpoint)
	}
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageSize), grpc.MaxCallSendMsgSize(maxMessageSize)),
	)
	if err != nil {
		return nil, fmt.Errorf("cri endpoint %q: %w", endpoint, err)
	}
	return &Client{conn: conn, runtime: runtimeapi.NewRuntimeServiceClient(conn), images: runtimeapi.NewImageServiceClient(conn)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Version returns the runtime's name and version.
func (c *Client) Version(ctx context.Context) (*runtimeapi.VersionResponse, error) {
	resp, err := c.runtime.Version(ctx, &runtimeapi.VersionRequest{Version: "v1"})
	if err != nil {
		return nil, fmt.Errorf("cri version: %w", err)
	}
	return resp, nil
}

// Status returns the runtime's conditions.
func (c *Client) Status(ctx context.Context) (*runtimeapi.RuntimeStatus, error) {
	resp, err := c.runtime.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return nil, fmt.Errorf("cri status: %w", err)
	}
	return resp.GetStatus(), nil
}

// RunPodSandbox runs a sandbox and returns its ID.
func (c *Client) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	if config.GetMetadata() == nil {
		return "", fmt.Errorf("run pod sandbox: config without metadata")
	}
	resp, err := c.runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config, RuntimeHandler: runtimeHandler})
	if err != nil {
		return "", fmt.Errorf("run pod sandbox %s/%s: %w", config.Metadata.Namespace, config.Metadata.Name, err)
	}
	return resp.GetPodSandboxId(), nil
}

// StopPodSandbox stops a sandbox's containers and tears its network down.
func (c *Client) StopPodSandbox(ctx context.Context, sandboxID string) error {
	if _, err := c.runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sandboxID}); err != nil {
		return fmt.Errorf("stop pod sandbox %s: %w", sandboxID, err)
	}
	return nil
}

// RemovePodSandbox removes a stopped sandbox and its containers.
func (c *Client) RemovePodSandbox(ctx context.Context, sandboxID string) error {
	if _, err := c.runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sandboxID}); err != nil {
		return fmt.Errorf("remove pod sandbox %s: %w", sandboxID, err)
	}
	return nil
}

// PodSandboxStatus returns a sandbox's state and network status.
func (c *Client) PodSandboxStatus(ctx context.Context, sandboxID string) (*runtimeapi.PodSandboxStatus, error) {
	resp, err := c.runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sandboxID})
	if err != nil {
		return nil, fmt.Errorf("pod sandbox status %s: %w", sandboxID, err)
	}
	return resp.GetStatus(), nil
}

// ListPodSandbox lists sandboxes matching filter (nil for all).
func (c *Client) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	resp, err := c.runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("list pod sandboxes: %w", err)
	}
	return resp.GetItems(), nil
}

// CreateContainer creates a container in a sandbox.
func (c *Client) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	if sandboxConfig.GetMetadata() == nil {
		// containerd 1.6.20 dereferences it without a check and crashes.
		return "", fmt.Errorf("create container in %s: sandbox config without metadata", sandboxID)
	}
	resp, err := c.runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sandboxID, Config: config, SandboxConfig: sandboxConfig})
	if err != nil {
		return "", fmt.Errorf("create container %s in %s: %w", config.GetMetadata().GetName(), sandboxID, err)
	}
	return resp.GetContainerId(), nil
}

// StartContainer starts a created container.
func (c *Client) StartContainer(ctx context.Context, containerID string) error {
	if _, err := c.runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: containerID}); err != nil {
		return fmt.Errorf("start container %s: %w", containerID, err)
	}
	return nil
}

// StopContainer stops a container, killing it after timeout.
func (c *Client) StopContainer(ctx context.Context, containerID string, timeout time.Duration) error {
	seconds := int64(timeout / time.Second)
	if _, err := c.runtime.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: containerID, Timeout: seconds}); err != nil {
		return fmt.Errorf("stop container %s: %w", containerID, err)
	}
	return nil
}

// RemoveContainer removes a container.
func (c *Client) RemoveContainer(ctx context.Context, containerID string) error {
	if _, err := c.runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: containerID}); err != nil {
		return fmt.Errorf("remove container %s: %w", containerID, err)
	}
	return nil
}

// UpdateContainerResources applies new Linux resources to a running container.
func (c *Client) UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.LinuxContainerResources) error {
	if _, err := c.runtime.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: containerID, Linux: resources}); err != nil {
		return fmt.Errorf("update resources of container %s: %w", containerID, err)
	}
	return nil
}

// ListContainers lists containers matching filter (nil for all).
func (c *Client) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	resp, err := c.runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	return resp.GetContainers(), nil
}

// ContainerStatus returns a container's state, exit code and times.
func (c *Client) ContainerStatus(ctx context.Context, containerID string) (*runtimeapi.ContainerStatus, error) {
	resp, err := c.runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: containerID})
	if err != nil {
		return nil, fmt.Errorf("container status %s: %w", containerID, err)
	}
	return resp.GetStatus(), nil
}

// ContainerPID returns the host PID of a container's process as the runtime's verbose status
// names it (containerd's "info" JSON carries "pid"), or 0 when it names none (an exited
// container, or a runtime that does not say).
func (c *Client) ContainerPID(ctx context.Context, containerID string) (int, error) {
	resp, err := c.runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: containerID, Verbose: true})
	if err != nil {
		return 0, fmt.Errorf("container status %s: %w", containerID, err)
	}
	return pidFromInfo(resp.GetInfo())
}

// pidFromInfo reads "pid" from the "info" entry of a verbose container status.
func pidFromInfo(info map[string]string) (int, error) {
	raw, ok := info["info"]
	if !ok {
		return 0, nil
	}
	var verbose struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(raw), &verbose); err != nil {
		return 0, fmt.Errorf("verbose container status: %w", err)
	}
	return verbose.Pid, nil
}

// ExecSync runs cmd in a container and waits for it.
func (c *Client) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	resp, err := c.runtime.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: containerID, Cmd: cmd, Timeout: int64(timeout / time.Second)})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("exec in %s: %w", containerID, err)
	}
	return resp.GetStdout(), resp.GetStderr(), resp.GetExitCode(), nil
}

// Exec returns the streaming URL of an exec session.
func (c *Client) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (string, error) {
	resp, err := c.runtime.Exec(ctx, req)
	if err != nil {
		return "", fmt.Errorf("exec in %s: %w", req.GetContainerId(), err)
	}
	return resp.GetUrl(), nil
}

// Attach returns the streaming URL of an attach session.
func (c *Client) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (string, error) {
	resp, err := c.runtime.Attach(ctx, req)
	if err != nil {
		return "", fmt.Errorf("attach to %s: %w", req.GetContainerId(), err)
	}
	return resp.GetUrl(), nil
}

// PortForward returns the streaming URL of a port-forward session.
func (c *Client) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (string, error) {
	resp, err := c.runtime.PortForward(ctx, req)
	if err != nil {
		return "", fmt.Errorf("port-forward to %s: %w", req.GetPodSandboxId(), err)
	}
	return resp.GetUrl(), nil
}

// ImageStatus returns the image or nil when the runtime does not have it.
func (c *Client) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec) (*runtimeapi.Image, error) {
	resp, err := c.images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: image})
	if err != nil {
		return nil, fmt.Errorf("image status %s: %w", image.GetImage(), err)
	}
	return resp.GetImage(), nil
}

// PullImage pulls an image and returns its image reference.
func (c *Client) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	resp, err := c.images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: image, Auth: auth, SandboxConfig: sandboxConfig})
	if err != nil {
		return "", fmt.Errorf("pull image %s: %w", image.GetImage(), err)
	}
	return resp.GetImageRef(), nil
}

// ListImages lists images matching filter (nil for all).
func (c *Client) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	resp, err := c.images.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	return resp.GetImages(), nil
}

// RemoveImage removes an image.
func (c *Client) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	if _, err := c.images.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: image}); err != nil {
		return fmt.Errorf("remove image %s: %w", image.GetImage(), err)
	}
	return nil
}
