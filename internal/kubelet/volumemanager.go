package kubelet

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/kubelet/csi"
)

// podVolumes is what the pod sync asks of the volume manager: a pod's volumes set up before its
// containers are created and torn down after they are gone, and what it cached for a pod
// forgotten.
type podVolumes interface {
	// setupVolumes mounts or writes every volume of the pod (volumes.go).
	setupVolumes(ctx context.Context, pod *corev1.Pod, src *objectSource, in envInputs) (map[string]volume, error)
	// teardownPod unpublishes the pod's CSI volumes and unmounts the rest; while it fails the pod
	// stays, as Kubernetes keeps a pod whose volumes are still mounted.
	teardownPod(ctx context.Context, uid string) error
	// cleanupOrphans tears down the volumes of pods the kubelet no longer runs (those found on
	// disk after a restart); inUse names the pods that are not its to clean.
	cleanupOrphans(ctx context.Context, inUse func(types.UID) bool)
	// forgetPod drops what is cached for a pod that is gone.
	forgetPod(uid types.UID)
}

// volumeManager owns the pods' volumes on this node: the kubelet's own (emptyDir, configMap,
// secret, downward API, projected, hostPath, local claims; volumes.go), and the CSI volumes
// (csivolume.go) with the drivers that register through RootDir/plugins_registry, the stages and
// publishes, and their records on disk, from which a restarted kubelet reconstructs them. It
// reads nothing of the pod sync's state: the pod sync calls it through podVolumes, the node's
// status through inUseVolumes and the HTTP API through volumeUsageSource.
type volumeManager struct {
	client   kubernetes.Interface
	clock    clock.PassiveClock
	log      *slog.Logger
	recorder record.EventRecorder
	// rootDir is Config.RootDir (CSI's pods/ and plugins_registry/), dataDir Config.DataDir (the
	// pods' data directories), nodeName the node the CSI records are for.
	rootDir, dataDir, nodeName string

	// drivers are the CSI node plugins registered through RootDir/plugins_registry by plugins.
	drivers *csi.Registry
	plugins *csi.Watcher

	mu sync.Mutex
	// owned lists the "<pod uid>/<volume>" local volumes given the pod's fsGroup.
	owned map[string]bool
	// tokens caches service account tokens of projected volumes.
	tokens map[string]cachedToken
	// csiPublished and csiStaged are the targets and staging paths this kubelet published and
	// staged since it started (csivolume.go).
	csiPublished map[string]bool
	csiStaged    map[string]bool
	// localDeviceUsers are the pods using each local volume's device mount (localvolume.go).
	localDeviceUsers map[string]map[types.UID]bool
	// stageMu keeps stages and unstages apart (one volume is never staged and unstaged at once).
	stageMu sync.Mutex
}

func newVolumeManager(cfg Config, client kubernetes.Interface, clk clock.WithTicker, log *slog.Logger, recorder record.EventRecorder) *volumeManager {
	drivers := csi.NewRegistry()
	return &volumeManager{
		client: client, clock: clk, log: log, recorder: recorder,
		rootDir: cfg.RootDir, dataDir: cfg.DataDir, nodeName: cfg.NodeName,
		drivers: drivers,
		plugins: &csi.Watcher{
			Dir: filepath.Join(cfg.RootDir, "plugins_registry"), Registry: drivers,
			NodeInfo: &csi.NodeInfo{Client: client, NodeName: cfg.NodeName}, Clock: clk, Log: log,
		},
		owned: map[string]bool{}, tokens: map[string]cachedToken{}, csiPublished: map[string]bool{}, csiStaged: map[string]bool{},
		localDeviceUsers: map[string]map[types.UID]bool{},
	}
}

// primePlugins registers the CSI drivers whose sockets are already there, before the kubelet
// looks at the volumes on disk.
func (vm *volumeManager) primePlugins(ctx context.Context) { vm.plugins.Prime(ctx) }

// pluginLoop registers the CSI node plugins whose sockets appear in RootDir/plugins_registry
// (after primePlugins).
func (vm *volumeManager) pluginLoop(ctx context.Context) { vm.plugins.Run(ctx) }

// teardownPod implements podVolumes: CSI volumes go through their drivers first, then the
// kubelet's own mounts are undone.
func (vm *volumeManager) teardownPod(ctx context.Context, uid string) error {
	if err := vm.teardownCSI(ctx, uid); err != nil {
		return err
	}
	vm.teardownVolumes(uid)
	return nil
}

// cleanupOrphans implements podVolumes with the CSI records on disk (cleanupCSIOrphans).
func (vm *volumeManager) cleanupOrphans(ctx context.Context, inUse func(types.UID) bool) {
	vm.cleanupCSIOrphans(ctx, inUse)
	for _, err := range vm.unmountUnusedLocalDevices(inUse) {
		vm.log.Warn("local volume device", "err", err)
	}
}

// forgetPod implements podVolumes: the pod's cached tokens and fsGroup ownership go.
func (vm *volumeManager) forgetPod(uid types.UID) {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	prefix := string(uid) + "/"
	for key := range vm.tokens {
		if strings.HasPrefix(key, prefix) {
			delete(vm.tokens, key)
		}
	}
	for key := range vm.owned {
		if strings.HasPrefix(key, prefix) {
			delete(vm.owned, key)
		}
	}
}
