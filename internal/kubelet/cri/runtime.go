package cri

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RuntimeService manages pod sandboxes and containers.
type RuntimeService interface {
	Version(ctx context.Context) (*runtimeapi.VersionResponse, error)
	// Status reports the runtime's conditions (RuntimeReady, NetworkReady).
	Status(ctx context.Context) (*runtimeapi.RuntimeStatus, error)

	// RunPodSandbox creates and starts a sandbox (with its network) and
	// returns its ID.
	RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error)
	StopPodSandbox(ctx context.Context, sandboxID string) error
	RemovePodSandbox(ctx context.Context, sandboxID string) error
	PodSandboxStatus(ctx context.Context, sandboxID string) (*runtimeapi.PodSandboxStatus, error)
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)

	// CreateContainer creates a container in a sandbox. sandboxConfig must be
	// the full config the sandbox was run with (containerd 1.6 crashes on one
	// without Metadata).
	CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, containerID string) error
	// StopContainer signals the container and kills it after timeout.
	StopContainer(ctx context.Context, containerID string, timeout time.Duration) error
	RemoveContainer(ctx context.Context, containerID string) error
	// UpdateContainerResources changes a running container's cgroup settings
	// in place (an in-place pod resize).
	UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.LinuxContainerResources) error
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string) (*runtimeapi.ContainerStatus, error)

	// ExecSync runs cmd in a container and returns its output and exit code.
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error)
	// Exec, Attach and PortForward return a URL on the runtime's streaming
	// server that serves the session.
	Exec(ctx context.Context, req *runtimeapi.ExecRequest) (string, error)
	Attach(ctx context.Context, req *runtimeapi.AttachRequest) (string, error)
	PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (string, error)
}

// ImageService manages images.
type ImageService interface {
	// ImageStatus returns the image, or nil without error when it is absent.
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec) (*runtimeapi.Image, error)
	// PullImage pulls an image and returns its reference (image ID).
	PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error
}

// Runtime is everything the kubelet needs from a container runtime.
type Runtime interface {
	RuntimeService
	ImageService
}

// ErrNotFound is matched (errors.Is) by errors about an absent sandbox,
// container or image.
var ErrNotFound = errors.New("not found") //nolint:gochecknoglobals // sentinel error value, never mutated.

// IsNotFound reports whether err says the object does not exist, either as
// ErrNotFound or as a gRPC NotFound status from the runtime.
func IsNotFound(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrNotFound) {
		return true
	}
	var withStatus interface{ GRPCStatus() *status.Status }
	if errors.As(err, &withStatus) {
		return withStatus.GRPCStatus().Code() == codes.NotFound
	}
	return false
}
