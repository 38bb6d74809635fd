package kubelet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiff-sh/skiff/internal/images"
	"github.com/skiff-sh/skiff/internal/kubelet/containerd"
	"github.com/skiff-sh/skiff/internal/kubelet/cri"
	"github.com/skiff-sh/skiff/internal/kubelet/kubeletauth"
)

// WorkerConfig is everything the worker role needs: the kubelet, and either
// an external CRI endpoint or a containerd for skiff to supervise.
type WorkerConfig struct {
	Kubelet Config
	// RuntimeEndpoint is an existing CRI socket ("unix:///run/containerd/containerd.sock").
	// Empty means skiff starts and supervises its own containerd.
	RuntimeEndpoint string
	// Containerd configures the supervised containerd; its DataDir defaults
	// to Kubelet.DataDir. Ignored with RuntimeEndpoint.
	Containerd containerd.Config
	// ServerTLS, when set, serves the kubelet API (logs, exec, attach,
	// port-forward) on ServerAddress with this serving certificate and
	// client-certificate verification (see Kubelet.Serve).
	ServerTLS     *tls.Config
	ServerAddress string
}

// Runtime is a containerd skiff supervises, started ahead of the kubelet (StartRuntime): its start
// and the pause image's import then overlap whatever the node does before its kubelet runs (the
// control plane's start, on a node with every role).
type Runtime struct {
	supervisor *containerd.Supervisor
	cancel     context.CancelFunc
	// prepared is closed once containerd serves and holds the pause image, or could not; err
	// says which.
	prepared chan struct{}
	err      error
	// supervised is the supervisor's result; group holds its goroutine and the preparation's.
	supervised chan error
	group      sync.WaitGroup
}

// StartRuntime starts the supervised containerd of ccfg (its DataDir defaulting to dataDir, the
// kubelet's) and, once it serves, imports the pause image it lacks. It returns at once; Wait says
// when the runtime is ready. Close stops containerd and waits for both.
func StartRuntime(ccfg containerd.Config, dataDir string, log *slog.Logger) (*Runtime, error) {
	if log == nil {
		log = slog.Default()
	}
	if ccfg.DataDir == "" {
		ccfg.DataDir = dataDir
	}
	supervisor, err := containerd.New(ccfg, nil, log)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runtime{supervisor: supervisor, cancel: cancel, prepared: make(chan struct{}), supervised: make(chan error, 1)}
	r.group.Go(func() { r.supervised <- supervisor.Run(ctx) })
	r.group.Go(func() {
		defer close(r.prepared)
		r.err = r.prepare(ctx, dataDir)
	})
	return r, nil
}

// prepare waits for containerd to serve and imports the pause image when it is missing.
func (r *Runtime) prepare(ctx context.Context, dataDir string) error {
	select {
	case <-r.supervisor.Ready():
	case err := <-r.supervised:
		r.supervised <- err // Close reads it again
		return fmt.Errorf("containerd: %w", errors.Join(err, errors.New("stopped before it was ready")))
	case <-ctx.Done():
		return ctx.Err()
	}
	conn, err := cri.Dial(r.supervisor.Endpoint())
	if err != nil {
		return err
	}
	defer conn.Close()
	return ensurePauseImage(ctx, conn, r.supervisor, dataDir)
}

// Wait blocks until the runtime is ready (containerd serving, the pause image in its store) or
// could not be made so, or ctx ends.
func (r *Runtime) Wait(ctx context.Context) error {
	select {
	case <-r.prepared:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Endpoint is the CRI endpoint the kubelet dials.
func (r *Runtime) Endpoint() string { return r.supervisor.Endpoint() }

// Config is the supervised containerd's configuration (its CNI directories the kubelet uses).
func (r *Runtime) Config() containerd.Config { return r.supervisor.Config() }

// Close stops containerd and waits for it; its error is the supervisor's.
func (r *Runtime) Close() error {
	r.cancel()
	r.group.Wait()
	select {
	case err := <-r.supervised:
		return err
	default:
		return nil
	}
}

// RunWorker runs a node's container runtime and kubelet until ctx ends. The runtime is
// cfg.RuntimeEndpoint, or rt (a supervised containerd the caller started and closes), or else a
// containerd RunWorker starts and stops itself (StartRuntime). log may be nil.
func RunWorker(ctx context.Context, cfg WorkerConfig, rt *Runtime, client kubernetes.Interface, log *slog.Logger) (runErr error) {
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	endpoint := cfg.RuntimeEndpoint
	if endpoint == "" {
		if rt == nil {
			var err error
			if rt, err = StartRuntime(cfg.Containerd, cfg.Kubelet.DataDir, log); err != nil {
				return err
			}
			defer func() {
				if err := rt.Close(); err != nil && runErr == nil {
					runErr = err
				}
			}()
		}
		if err := rt.Wait(ctx); err != nil {
			return err
		}
		cfg.Kubelet.CNIConfDir = rt.Config().CNIConfDir
		if rt.Config().SkiffCNIBinary != "" {
			cfg.Kubelet.SkiffCNI = true
			cfg.Kubelet.CNIPortmapPath = filepath.Join(rt.Config().StockCNIBinDir, "portmap")
		}
		endpoint = rt.Endpoint()
	}
	runtime, err := cri.Dial(endpoint)
	if err != nil {
		return err
	}
	defer runtime.Close()
	// The kubelet API authenticates and authorizes through the API server (TokenReview,
	// SubjectAccessReview), as the kubelet's Webhook modes do.
	apiAuth, err := kubeletauth.New(kubeletauth.Config{Client: client, NodeName: cfg.Kubelet.NodeName, Log: log.With("component", "kubelet-api")})
	if err != nil {
		return err
	}
	if root := cfg.Kubelet.RootDir; root != "" && root != cfg.Kubelet.DataDir {
		// CSI node plugins publish volumes under the root's pods/ with Bidirectional propagation:
		// their mounts reach the host and the pods only through a shared mount.
		if err := ensureSharedMount(root); err != nil {
			return fmt.Errorf("kubelet root dir: %w", err)
		}
	}
	k, err := New(cfg.Kubelet, Deps{Client: client, Runtime: runtime, Log: log, APIAuth: apiAuth.Wrap})
	if err != nil {
		return err
	}
	if cfg.ServerTLS != nil {
		go func() {
			if err := k.Serve(ctx, cfg.ServerAddress, cfg.ServerTLS); err != nil {
				log.Error("kubelet API server stopped", "err", err)
				cancel()
			}
		}()
	}
	return k.Run(ctx)
}

// ensurePauseImage imports the offline pause image into the supervised
// containerd when it is missing, so sandboxes start without a registry.
func ensurePauseImage(ctx context.Context, runtime cri.Runtime, supervisor *containerd.Supervisor, dataDir string) error {
	sandboxImage := supervisor.Config().SandboxImage
	if sandboxImage != images.PauseImage {
		return nil
	}
	var lastErr error
	for attempt := 0; attempt < 50; attempt++ {
		img, err := runtime.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: sandboxImage})
		if err == nil && img != nil {
			return nil
		}
		if err == nil {
			lastErr = nil
			break
		}
		// The CRI plugin may still be starting.
		lastErr = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if lastErr != nil {
		return fmt.Errorf("pause image status: %w", lastErr)
	}
	archive, err := images.BuildPause(filepath.Join(dataDir, "images"))
	if err != nil {
		return err
	}
	return images.Import(ctx, supervisor.Address(), archive)
}
