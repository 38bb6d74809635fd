package kubelet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
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

// RunWorker runs a node's container runtime and kubelet until ctx ends.
// With no RuntimeEndpoint it starts containerd, builds and imports the
// pause image if the runtime lacks it, and points the kubelet's CNI
// configuration at containerd's conf dir. log may be nil.
func RunWorker(ctx context.Context, cfg WorkerConfig, client kubernetes.Interface, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	endpoint := cfg.RuntimeEndpoint
	supervised := make(chan error, 1)
	var supervisor *containerd.Supervisor
	if endpoint == "" {
		ccfg := cfg.Containerd
		if ccfg.DataDir == "" {
			ccfg.DataDir = cfg.Kubelet.DataDir
		}
		var err error
		supervisor, err = containerd.New(ccfg, nil, log)
		if err != nil {
			return err
		}
		cfg.Kubelet.CNIConfDir = supervisor.Config().CNIConfDir
		if supervisor.Config().SkiffCNIBinary != "" {
			cfg.Kubelet.SkiffCNI = true
			cfg.Kubelet.CNIPortmapPath = filepath.Join(supervisor.Config().StockCNIBinDir, "portmap")
		}
		go func() { supervised <- supervisor.Run(ctx) }()
		select {
		case <-supervisor.Ready():
		case err := <-supervised:
			return fmt.Errorf("containerd: %w", errors.Join(err, errors.New("stopped before it was ready")))
		case <-ctx.Done():
			return <-supervised
		}
		endpoint = supervisor.Endpoint()
	}
	runtime, err := cri.Dial(endpoint)
	if err != nil {
		return err
	}
	defer runtime.Close()
	if supervisor != nil {
		if err := ensurePauseImage(ctx, runtime, supervisor, cfg.Kubelet.DataDir); err != nil {
			return err
		}
	}
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
	runErr := k.Run(ctx)
	cancel()
	if supervisor != nil {
		if err := <-supervised; err != nil && runErr == nil {
			runErr = err
		}
	}
	return runErr
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
