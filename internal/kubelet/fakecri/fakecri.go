// Package fakecri is an in-memory container runtime implementing cri.Runtime
// for the kubelet's tests: sandboxes get addresses from a fake pod network,
// containers run until the test makes them exit (Exit) or the kubelet stops
// them, and every call is recorded so tests can assert the order of actions.
//
// It must not be used outside tests.
package fakecri

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/kubelet/cri"
)

// Call is one recorded runtime call.
type Call struct {
	Method string
	// Target names what the call acted on: a sandbox "namespace/name", a
	// container name, or an image.
	Target string
}

type sandbox struct {
	status *runtimeapi.PodSandboxStatus
	config *runtimeapi.PodSandboxConfig
}

type container struct {
	status    *runtimeapi.ContainerStatus
	config    *runtimeapi.ContainerConfig
	sandboxID string
}

// Runtime is the fake. The zero value is not usable; call New.
type Runtime struct {
	clock clock.Clock

	mu         sync.Mutex
	nextID     int
	nextIP     int
	sandboxes  map[string]*sandbox
	containers map[string]*container
	images     map[string]*runtimeapi.Image
	calls      []Call
	// failures maps a method to the error its next call returns.
	failures     map[string]error
	networkReady bool
	pullCount    map[string]int
	stopTimeouts map[string]time.Duration
	// execCodes maps a command line to the exit code ExecSync reports.
	execCodes map[string]int32
	// execHolds maps a command line to a channel its ExecSync waits on (HoldExec).
	execHolds map[string]chan struct{}
	// writable maps a container to the bytes of its writable layer ListContainerStats reports
	// (SetWritableLayer); unset, none is reported.
	writable map[string]uint64
	// pids maps a container to the host process ContainerPID names for it.
	pids map[string]int
	// execs and attaches are the streaming requests asked for, oldest first.
	execs    []*runtimeapi.ExecRequest
	attaches []*runtimeapi.AttachRequest
	// streamingURL is where streaming sessions are served (SetStreamingURL); defaultStreamingURL
	// when unset.
	streamingURL string
}

var _ cri.Runtime = (*Runtime)(nil)

// New returns an empty runtime whose timestamps come from clk, with the
// given images present.
func New(clk clock.Clock, imageRefs ...string) *Runtime {
	r := &Runtime{
		clock: clk, sandboxes: map[string]*sandbox{}, containers: map[string]*container{},
		images: map[string]*runtimeapi.Image{}, failures: map[string]error{}, networkReady: true,
		pullCount: map[string]int{}, stopTimeouts: map[string]time.Duration{}, execCodes: map[string]int32{}, execHolds: map[string]chan struct{}{}, writable: map[string]uint64{},
	}
	for _, ref := range imageRefs {
		r.AddImage(ref)
	}
	return r
}

// AddImage makes an image present.
func (r *Runtime) AddImage(ref string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.images[ref] = &runtimeapi.Image{Id: imageID(ref), RepoTags: []string{ref}, Size: 1 << 20}
}

func imageID(ref string) string {
	return fmt.Sprintf("sha256:%064x", len(ref)*7919+int(ref[0]))
}

// SetNetworkReady changes the NetworkReady condition Status reports.
func (r *Runtime) SetNetworkReady(ready bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.networkReady = ready
}

// FailNext makes the next call of method return err.
func (r *Runtime) FailNext(method string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures[method] = err
}

// Calls returns the recorded calls.
func (r *Runtime) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// CallsTo returns the targets of the recorded calls of one method, in order.
func (r *Runtime) CallsTo(method string) []string {
	var out []string
	for _, c := range r.Calls() {
		if c.Method == method {
			out = append(out, c.Target)
		}
	}
	return out
}

// Exit makes a running container exit with code, as if its process ended.
func (r *Runtime) Exit(containerID string, code int32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[containerID]
	if !ok || c.status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return fmt.Errorf("container %s is not running", containerID)
	}
	r.exitLocked(c, code, "")
	return nil
}

func (r *Runtime) exitLocked(c *container, code int32, reason string) {
	c.status.State = runtimeapi.ContainerState_CONTAINER_EXITED
	c.status.ExitCode = code
	c.status.FinishedAt = r.clock.Now().UnixNano()
	if reason == "" {
		reason = "Completed"
		if code != 0 {
			reason = "Error"
		}
	}
	c.status.Reason = reason
}

// ContainerConfig returns the config a container was created with.
func (r *Runtime) ContainerConfig(containerID string) *runtimeapi.ContainerConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.containers[containerID]; ok {
		return proto.Clone(c.config).(*runtimeapi.ContainerConfig)
	}
	return nil
}

// StopTimeout returns the timeout a container was stopped with.
func (r *Runtime) StopTimeout(containerID string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopTimeouts[containerID]
}

// SandboxConfig returns the config a sandbox was run with.
func (r *Runtime) SandboxConfig(sandboxID string) *runtimeapi.PodSandboxConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.sandboxes[sandboxID]; ok {
		return proto.Clone(s.config).(*runtimeapi.PodSandboxConfig)
	}
	return nil
}

// RunningContainer returns the ID of the running container with this name
// in the pod with uid, or "".
func (r *Runtime) RunningContainer(podUID, name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, c := range r.containers {
		s := r.sandboxes[c.sandboxID]
		if c.status.State == runtimeapi.ContainerState_CONTAINER_RUNNING && c.config.Metadata.Name == name && s != nil && s.config.Metadata.Uid == podUID {
			return id
		}
	}
	return ""
}

// AddOrphanSandbox adds a ready sandbox, with one running container, that
// no kubelet created, as a crash of an earlier kubelet would leave.
func (r *Runtime) AddOrphanSandbox(config *runtimeapi.PodSandboxConfig) string {
	id, _ := r.RunPodSandbox(context.Background(), config, "")
	cid, _ := r.CreateContainer(context.Background(), id, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "orphan"}, Image: &runtimeapi.ImageSpec{Image: "orphan"},
		Labels: config.Labels,
	}, config)
	_ = r.StartContainer(context.Background(), cid)
	return id
}

// SandboxCount returns how many sandboxes exist, and how many are ready.
func (r *Runtime) SandboxCount() (all, ready int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sandboxes {
		all++
		if s.status.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready++
		}
	}
	return all, ready
}

// note records a read-only call (no injected failure applies to it), so tests
// can count every round trip.
func (r *Runtime) note(method, target string) {
	r.calls = append(r.calls, Call{Method: method, Target: target})
}

func (r *Runtime) record(method, target string) error {
	r.calls = append(r.calls, Call{Method: method, Target: target})
	if err, ok := r.failures[method]; ok {
		delete(r.failures, method)
		return err
	}
	return nil
}

func (r *Runtime) newID(prefix string) string {
	r.nextID++
	return fmt.Sprintf("%s%04d", prefix, r.nextID)
}

func notFound(kind, id string) error {
	return fmt.Errorf("%s %q: %w", kind, id, cri.ErrNotFound)
}

func (r *Runtime) Version(context.Context) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "fakecri", RuntimeVersion: "1.0.0", RuntimeApiVersion: "v1"}, nil
}

func (r *Runtime) Status(context.Context) (*runtimeapi.RuntimeStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.record("Status", ""); err != nil {
		return nil, err
	}
	network := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: r.networkReady}
	if !r.networkReady {
		network.Reason, network.Message = "NetworkPluginNotReady", "cni config uninitialized"
	}
	return &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true}, network,
	}}, nil
}

func (r *Runtime) RunPodSandbox(_ context.Context, config *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if config.GetMetadata() == nil {
		return "", fmt.Errorf("sandbox config without metadata")
	}
	if err := r.record("RunPodSandbox", config.Metadata.Namespace+"/"+config.Metadata.Name); err != nil {
		return "", err
	}
	id := r.newID("sandbox")
	r.nextIP++
	network := &runtimeapi.PodSandboxNetworkStatus{Ip: fmt.Sprintf("10.1.%d.%d", r.nextIP/250, r.nextIP%250+2)}
	if ns := config.GetLinux().GetSecurityContext().GetNamespaceOptions(); ns.GetNetwork() == runtimeapi.NamespaceMode_NODE {
		network = &runtimeapi.PodSandboxNetworkStatus{}
	}
	r.sandboxes[id] = &sandbox{
		config: proto.Clone(config).(*runtimeapi.PodSandboxConfig),
		status: &runtimeapi.PodSandboxStatus{
			Id: id, Metadata: config.Metadata, State: runtimeapi.PodSandboxState_SANDBOX_READY,
			CreatedAt: r.clock.Now().UnixNano(), Network: network, Labels: config.Labels, Annotations: config.Annotations, RuntimeHandler: handler,
		},
	}
	return id, nil
}

func (r *Runtime) StopPodSandbox(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxes[id]
	if !ok {
		return notFound("sandbox", id)
	}
	if err := r.record("StopPodSandbox", s.config.Metadata.Namespace+"/"+s.config.Metadata.Name); err != nil {
		return err
	}
	for _, c := range r.containers {
		if c.sandboxID == id && c.status.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			r.exitLocked(c, 137, "Error")
		}
	}
	s.status.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	s.status.Network = &runtimeapi.PodSandboxNetworkStatus{}
	return nil
}

func (r *Runtime) RemovePodSandbox(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxes[id]
	if !ok {
		return nil // removal is idempotent in CRI
	}
	if err := r.record("RemovePodSandbox", s.config.Metadata.Namespace+"/"+s.config.Metadata.Name); err != nil {
		return err
	}
	if s.status.State == runtimeapi.PodSandboxState_SANDBOX_READY {
		return fmt.Errorf("sandbox %s is still ready; stop it first", id)
	}
	for cid, c := range r.containers {
		if c.sandboxID == id {
			delete(r.containers, cid)
		}
	}
	delete(r.sandboxes, id)
	return nil
}

func (r *Runtime) PodSandboxStatus(_ context.Context, id string) (*runtimeapi.PodSandboxStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.note("PodSandboxStatus", id)
	s, ok := r.sandboxes[id]
	if !ok {
		return nil, notFound("sandbox", id)
	}
	return proto.Clone(s.status).(*runtimeapi.PodSandboxStatus), nil
}

func labelsMatch(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (r *Runtime) ListPodSandbox(_ context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.note("ListPodSandbox", "")
	var out []*runtimeapi.PodSandbox
	for id, s := range r.sandboxes {
		if filter.GetId() != "" && filter.GetId() != id {
			continue
		}
		if filter.GetState() != nil && filter.GetState().State != s.status.State {
			continue
		}
		if !labelsMatch(filter.GetLabelSelector(), s.status.Labels) {
			continue
		}
		out = append(out, &runtimeapi.PodSandbox{
			Id: id, Metadata: s.status.Metadata, State: s.status.State, CreatedAt: s.status.CreatedAt,
			Labels: s.status.Labels, Annotations: s.status.Annotations,
		})
	}
	slices.SortFunc(out, func(a, b *runtimeapi.PodSandbox) int { return strings.Compare(a.Id, b.Id) })
	return out, nil
}

func (r *Runtime) CreateContainer(_ context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if sandboxConfig.GetMetadata() == nil {
		return "", fmt.Errorf("create container: sandbox config without metadata (containerd 1.6 would crash)")
	}
	if err := r.record("CreateContainer", config.GetMetadata().GetName()); err != nil {
		return "", err
	}
	s, ok := r.sandboxes[sandboxID]
	if !ok || s.status.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		return "", fmt.Errorf("sandbox %s is not ready", sandboxID)
	}
	img, ok := r.images[config.GetImage().GetImage()]
	if !ok {
		for _, i := range r.images {
			if i.Id == config.GetImage().GetImage() {
				img, ok = i, true
			}
		}
	}
	if !ok {
		return "", fmt.Errorf("image %q not present", config.GetImage().GetImage())
	}
	id := r.newID("container")
	r.containers[id] = &container{
		sandboxID: sandboxID,
		config:    proto.Clone(config).(*runtimeapi.ContainerConfig),
		status: &runtimeapi.ContainerStatus{
			Id: id, Metadata: config.Metadata, State: runtimeapi.ContainerState_CONTAINER_CREATED,
			CreatedAt: r.clock.Now().UnixNano(), Image: config.Image, ImageRef: img.Id,
			Labels: config.Labels, Annotations: config.Annotations, LogPath: filepath.Join(s.config.LogDirectory, config.LogPath),
		},
	}
	return id, nil
}

func (r *Runtime) StartContainer(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return notFound("container", id)
	}
	if err := r.record("StartContainer", c.config.Metadata.Name); err != nil {
		return err
	}
	if c.status.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		return fmt.Errorf("container %s is not in created state", id)
	}
	c.status.State = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.status.StartedAt = r.clock.Now().UnixNano()
	return nil
}

func (r *Runtime) StopContainer(_ context.Context, id string, timeout time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return notFound("container", id)
	}
	if err := r.record("StopContainer", c.config.Metadata.Name); err != nil {
		return err
	}
	r.stopTimeouts[id] = timeout
	if c.status.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
		r.exitLocked(c, 143, "Error")
	}
	return nil
}

func (r *Runtime) RemoveContainer(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return nil
	}
	if err := r.record("RemoveContainer", c.config.Metadata.Name); err != nil {
		return err
	}
	if c.status.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
		return fmt.Errorf("container %s is running", id)
	}
	delete(r.containers, id)
	return nil
}

// UpdateContainerResources records the call and keeps the resources in the
// container's config (ContainerConfig shows what was last applied).
func (r *Runtime) UpdateContainerResources(_ context.Context, id string, resources *runtimeapi.LinuxContainerResources) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return notFound("container", id)
	}
	if err := r.record("UpdateContainerResources", c.config.Metadata.Name); err != nil {
		return err
	}
	if c.status.State != runtimeapi.ContainerState_CONTAINER_RUNNING && c.status.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		return fmt.Errorf("container %s is not running", id)
	}
	if c.config.Linux == nil {
		c.config.Linux = &runtimeapi.LinuxContainerConfig{}
	}
	c.config.Linux.Resources = proto.Clone(resources).(*runtimeapi.LinuxContainerResources)
	return nil
}

func (r *Runtime) ListContainers(_ context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.record("ListContainers", ""); err != nil {
		return nil, err
	}
	var out []*runtimeapi.Container
	for id, c := range r.containers {
		if filter.GetId() != "" && filter.GetId() != id {
			continue
		}
		if filter.GetPodSandboxId() != "" && filter.GetPodSandboxId() != c.sandboxID {
			continue
		}
		if filter.GetState() != nil && filter.GetState().State != c.status.State {
			continue
		}
		if !labelsMatch(filter.GetLabelSelector(), c.status.Labels) {
			continue
		}
		out = append(out, &runtimeapi.Container{
			Id: id, PodSandboxId: c.sandboxID, Metadata: c.status.Metadata, Image: c.status.Image, ImageRef: c.status.ImageRef,
			State: c.status.State, CreatedAt: c.status.CreatedAt, Labels: c.status.Labels, Annotations: c.status.Annotations,
		})
	}
	slices.SortFunc(out, func(a, b *runtimeapi.Container) int { return strings.Compare(a.Id, b.Id) })
	return out, nil
}

func (r *Runtime) ContainerStatus(_ context.Context, id string) (*runtimeapi.ContainerStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.note("ContainerStatus", id)
	c, ok := r.containers[id]
	if !ok {
		return nil, notFound("container", id)
	}
	return proto.Clone(c.status).(*runtimeapi.ContainerStatus), nil
}

func (r *Runtime) ExecSync(ctx context.Context, id string, cmd []string, _ time.Duration) ([]byte, []byte, int32, error) {
	r.mu.Lock()
	c, ok := r.containers[id]
	if !ok {
		r.mu.Unlock()
		return nil, nil, 0, notFound("container", id)
	}
	line := strings.Join(cmd, " ")
	if err := r.record("ExecSync", c.config.Metadata.Name+":"+line); err != nil {
		r.mu.Unlock()
		return nil, nil, 0, err
	}
	hold := r.execHolds[line]
	r.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, nil, 0, ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return []byte(line), nil, r.execCodes[line], nil
}

// HoldExec makes ExecSync of this command line wait until release is called (or its context
// ends): a preStop hook that takes its time.
func (r *Runtime) HoldExec(command string) (release func()) {
	ch := make(chan struct{})
	r.mu.Lock()
	r.execHolds[command] = ch
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			delete(r.execHolds, command)
			r.mu.Unlock()
			close(ch)
		})
	}
}

// SetExecExitCode makes ExecSync of this command line exit with code.
func (r *Runtime) SetExecExitCode(command string, code int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.execCodes[command] = code
}

// SetPID makes ContainerPID name pid as the container's host process while the container runs
// (a real runtime names none once it has recorded the exit).
func (r *Runtime) SetPID(containerID string, pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pids == nil {
		r.pids = map[string]int{}
	}
	r.pids[containerID] = pid
}

// ContainerPID is cri.Client's ContainerPID: the process SetPID gave a running container, else 0.
func (r *Runtime) ContainerPID(_ context.Context, id string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.note("ContainerPID", id)
	c, ok := r.containers[id]
	if !ok {
		return 0, notFound("container", id)
	}
	if c.status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return 0, nil
	}
	return r.pids[id], nil
}

// defaultStreamingURL is where the fake's streaming sessions are served unless a test serves them
// itself: a loopback port nothing listens on, so a session handed to it fails at once and never
// leaves the machine.
const defaultStreamingURL = "http://127.0.0.1:1/"

// SetStreamingURL makes Exec, Attach and PortForward answer sessions under base (ending in "/"),
// a streaming server the test runs.
func (r *Runtime) SetStreamingURL(base string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.streamingURL = base
}

// streamingBase is the streaming server's URL; r.mu is held.
func (r *Runtime) streamingBase() string {
	if r.streamingURL != "" {
		return r.streamingURL
	}
	return defaultStreamingURL
}

func (r *Runtime) Exec(_ context.Context, req *runtimeapi.ExecRequest) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.note("Exec", req.ContainerId)
	r.execs = append(r.execs, proto.Clone(req).(*runtimeapi.ExecRequest))
	return r.streamingBase() + "exec/" + req.ContainerId, nil
}

func (r *Runtime) Attach(_ context.Context, req *runtimeapi.AttachRequest) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.note("Attach", req.ContainerId)
	r.attaches = append(r.attaches, proto.Clone(req).(*runtimeapi.AttachRequest))
	return r.streamingBase() + "attach/" + req.ContainerId, nil
}

// ExecRequests returns the exec requests asked for, oldest first.
func (r *Runtime) ExecRequests() []*runtimeapi.ExecRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.execs)
}

// AttachRequests returns the attach requests asked for, oldest first.
func (r *Runtime) AttachRequests() []*runtimeapi.AttachRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.attaches)
}

func (r *Runtime) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest) (string, error) {
	return r.streamingBase() + "portforward/" + req.PodSandboxId, nil
}

func (r *Runtime) ImageStatus(_ context.Context, spec *runtimeapi.ImageSpec) (*runtimeapi.Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.note("ImageStatus", spec.GetImage())
	if img, ok := r.images[spec.GetImage()]; ok {
		return proto.Clone(img).(*runtimeapi.Image), nil
	}
	return nil, nil
}

// Pulls returns how often an image was pulled.
func (r *Runtime) Pulls(ref string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pullCount[ref]
}

// PullImage succeeds for references under "registry.test/" and fails for
// any other absent image, as if no registry were reachable.
func (r *Runtime) PullImage(_ context.Context, spec *runtimeapi.ImageSpec, _ *runtimeapi.AuthConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ref := spec.GetImage()
	if err := r.record("PullImage", ref); err != nil {
		return "", err
	}
	r.pullCount[ref]++
	if img, ok := r.images[ref]; ok {
		return img.Id, nil
	}
	if !strings.HasPrefix(ref, "registry.test/") {
		return "", fmt.Errorf("failed to resolve reference %q: no registry reachable", ref)
	}
	r.images[ref] = &runtimeapi.Image{Id: imageID(ref), RepoTags: []string{ref}, Size: 1 << 20}
	return r.images[ref].Id, nil
}

func (r *Runtime) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.Image
	for _, img := range r.images {
		out = append(out, proto.Clone(img).(*runtimeapi.Image))
	}
	slices.SortFunc(out, func(a, b *runtimeapi.Image) int { return strings.Compare(a.Id, b.Id) })
	return out, nil
}

func (r *Runtime) RemoveImage(_ context.Context, spec *runtimeapi.ImageSpec) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.images, spec.GetImage())
	return nil
}
