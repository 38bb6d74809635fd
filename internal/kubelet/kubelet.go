package kubelet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/kubelet/cri"
)

// Deps are the kubelet's collaborators.
type Deps struct {
	// Client reaches the API server. Required.
	Client kubernetes.Interface
	// Runtime runs the containers. Required.
	Runtime cri.Runtime
	// Clock defaults to the real clock.
	Clock clock.WithTickerAndDelayedExecution
	// Log defaults to slog.Default().
	Log *slog.Logger
	// Recorder defaults to one that writes Events through Client.
	Recorder record.EventRecorder
	// Machine defaults to DetectMachineInfo(cfg.DataDir).
	Machine *MachineInfo
	// APIAuth authenticates and authorizes callers of the kubelet API (kubeletauth.Auth.Wrap);
	// nil accepts any client certificate the TLS layer verified.
	APIAuth func(http.Handler) http.Handler
}

// Kubelet runs one node's pods.
type Kubelet struct {
	cfg      Config
	client   kubernetes.Interface
	runtime  cri.Runtime
	clock    clock.WithTickerAndDelayedExecution
	log      *slog.Logger
	recorder record.EventRecorder
	// memoryCapacity is the machine's memory, against which a Burstable container's OOM score is
	// set (oomScoreAdj); the rest of the machine is the node status's.
	memoryCapacity int64
	// broadcaster is set when the kubelet created its own recorder.
	broadcaster record.EventBroadcaster

	backoff *crashLoopBackoff
	prober  *prober

	mu sync.Mutex
	// pods are the pods bound to this node as last seen by the informer;
	// a pod deleted from the API stays as a tombstone until its worker has
	// cleaned up.
	pods    map[types.UID]*podEntry
	workers map[types.UID]*podWorker
	// waiting holds the reason a container could not be started, shown in
	// its status until it starts.
	waiting map[types.UID]map[string]corev1.ContainerStateWaiting
	// services lists Services for the pods' environment.
	services corelisters.ServiceLister
	// admitted records each pod's admission decision (true: it may run).
	admitted map[types.UID]bool
	// resize holds each pod's allocated and actuated resources and its resize conditions
	// (resize.go), loaded from the pod's checkpoint on first use.
	resize map[types.UID]*podResizeState
	// sysctls are the sysctls pods may set.
	sysctls sysctlAllowlist
	// volumes owns the pods' volumes (volumemanager.go); the pod sync reaches it through podVolumes,
	// volumeManager the same manager for the wiring (its plugin registration loop).
	volumes       podVolumes
	volumeManager *volumeManager
	// runtimeID prefixes the containers' IDs in the pods' status ("containerd://...").
	runtimeID string
	// nodes owns the Node object and the Lease (nodestatus.go).
	nodes *nodeStatus

	workerWG sync.WaitGroup
	// workersClosed, guarded by mu, is set before Run waits for workerWG: a WaitGroup's Add from
	// zero must happen before its Wait, so no worker starts once Run has begun waiting.
	workersClosed bool
	// kills are the background kills of deleted pods (terminatePod), guarded by mu; their
	// goroutines are counted in workerWG.
	kills map[types.UID]*podKill
	// evicted holds the message of each pod chosen for eviction (eviction.go), guarded by mu; the
	// pod's worker carries the eviction out.
	evicted map[types.UID]string
	// sandboxSlots bounds the sandboxes being created at once
	// (Config.MaxParallelSandboxes).
	sandboxSlots chan struct{}

	// server answers the kubelet API (server.go).
	server *server

	ready     chan struct{}
	readyOnce sync.Once
	ctx       context.Context
}

type podEntry struct {
	pod     *corev1.Pod
	deleted bool
	// written is the resourceVersion of the kubelet's last status write.
	written string
}

// New validates cfg and returns a Kubelet.
func New(cfg Config, deps Deps) (*Kubelet, error) {
	cfg = cfg.WithDefaults()
	if cfg.ResolvConf == "" {
		cfg.ResolvConf = defaultResolvConf()
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kubelet config: %w", err)
	}
	if deps.Client == nil || deps.Runtime == nil {
		return nil, errors.New("kubelet: Client and Runtime are required")
	}
	k := &Kubelet{
		cfg: cfg, client: deps.Client, runtime: deps.Runtime, clock: deps.Clock, log: deps.Log, recorder: deps.Recorder,
		sandboxSlots: make(chan struct{}, cfg.MaxParallelSandboxes),
		pods:         map[types.UID]*podEntry{}, workers: map[types.UID]*podWorker{}, waiting: map[types.UID]map[string]corev1.ContainerStateWaiting{},
		ready: make(chan struct{}), runtimeID: "containerd", admitted: map[types.UID]bool{},
		resize: map[types.UID]*podResizeState{}, kills: map[types.UID]*podKill{}, evicted: map[types.UID]string{},
	}
	sysctls, err := newSysctlAllowlist(cfg.AllowedUnsafeSysctls)
	if err != nil {
		return nil, fmt.Errorf("kubelet config: allowedUnsafeSysctls: %w", err)
	}
	k.sysctls = sysctls
	if k.clock == nil {
		k.clock = clock.RealClock{}
	}
	if k.log == nil {
		k.log = slog.Default()
	}
	k.log = k.log.With("component", "kubelet", "node", cfg.NodeName)
	var machine MachineInfo
	if deps.Machine != nil {
		machine = *deps.Machine
	} else {
		m, err := DetectMachineInfo(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		machine = m
	}
	k.memoryCapacity = machine.MemoryBytes
	if k.recorder == nil {
		k.broadcaster = record.NewBroadcaster()
		k.recorder = k.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: cfg.NodeName})
	}
	k.prober = newProber(k)
	// The parts: the volumes, the node's object, the HTTP API, each given only what it needs.
	volumes := newVolumeManager(cfg, k.client, k.clock, k.log, k.recorder)
	k.volumes, k.volumeManager = volumes, volumes
	k.nodes = &nodeStatus{cfg: cfg, client: k.client, runtime: k.runtime, clock: k.clock, log: k.log, machine: machine, volumes: volumes}
	k.server = &server{
		pods: k, volumes: volumes, runtime: k.runtime, clock: k.clock, log: k.log, apiAuth: deps.APIAuth,
		nodeName: cfg.NodeName, dataDir: cfg.DataDir, nodeLogDir: cfg.NodeLogDir,
	}
	k.backoff = newCrashLoopBackoff(k.clock, cfg.CrashLoopInitialBackoff, cfg.CrashLoopMaxBackoff)
	return k, nil
}

// Ready is closed once the node is registered and the pod informer synced.
func (k *Kubelet) Ready() <-chan struct{} { return k.ready }

// Run registers the node and runs its pods until ctx ends. Containers keep
// running after Run returns: a restarted kubelet adopts them.
func (k *Kubelet) Run(ctx context.Context) error {
	k.mu.Lock()
	k.ctx = ctx
	k.mu.Unlock()
	if err := os.MkdirAll(k.podsDir(), 0o755); err != nil {
		return fmt.Errorf("kubelet: %w", err)
	}
	// CSI drivers' manifests mount these by hostPath with type Directory, as on any kubelet.
	for _, dir := range []string{"pods", "plugins", "plugins_registry"} {
		if err := os.MkdirAll(filepath.Join(k.cfg.RootDir, dir), 0o750); err != nil {
			return fmt.Errorf("kubelet: root dir: %w", err)
		}
	}
	if k.broadcaster != nil {
		k.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: k.client.CoreV1().Events("")})
		defer k.broadcaster.Shutdown()
	}
	if v, err := k.runtime.Version(ctx); err == nil && v.RuntimeName != "" {
		k.runtimeID = v.RuntimeName
	}
	if err := k.nodes.register(ctx); err != nil {
		return err
	}
	// The node's lease and status need neither the caches nor the plugins below: a registered node
	// reports Ready once its runtime and network are, not after its informers synced (at start-up
	// that was 100-150 ms more of every node's way to Ready).
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, loop := range []func(context.Context){k.nodes.leaseLoop, k.nodes.nodeStatusLoop} {
		wg.Go(func() { loop(ctx) })
	}

	onThisNode := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", k.cfg.NodeName).String()
	}
	factory := informers.NewSharedInformerFactoryWithOptions(k.client, 0, informers.WithTweakListOptions(onThisNode))
	serviceFactory := informers.NewSharedInformerFactory(k.client, 0)
	if k.cfg.PrepareInformers != nil {
		k.cfg.PrepareInformers(factory, onThisNode, serviceFactory)
	}
	podInformer := factory.Core().V1().Pods().Informer()
	podsHandled, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.podSeen(obj) },
		UpdateFunc: func(_, obj any) { k.podUpdated(obj) },
		DeleteFunc: k.podGone,
	})
	if err != nil {
		return fmt.Errorf("kubelet: pod informer: %w", err)
	}
	serviceInformer := serviceFactory.Core().V1().Services()
	k.services = serviceInformer.Lister()
	// The kubelet's own Node, as the control plane changes it (its pod CIDR above all).
	nodeFactory := informers.NewSharedInformerFactoryWithOptions(k.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", k.cfg.NodeName).String()
	}))
	nodeInformer := nodeFactory.Core().V1().Nodes().Informer()
	nodeHandled, err := nodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: k.nodes.observe, UpdateFunc: func(_, obj any) { k.nodes.observe(obj) },
	})
	if err != nil {
		return fmt.Errorf("kubelet: node informer: %w", err)
	}
	for _, f := range []informers.SharedInformerFactory{factory, serviceFactory, nodeFactory} {
		f.Start(ctx.Done())
		defer f.Shutdown()
	}
	// The handlers' registrations, not the informers: an informer has synced once its first list is
	// in its store, before its handlers have seen it, and the orphan cleanup below must know every
	// pod podSeen records, or it takes a running pod for an orphan and kills it.
	if !cache.WaitFor(ctx, "", podsHandled.HasSyncedChecker(), serviceInformer.Informer().HasSyncedChecker(), nodeHandled.HasSyncedChecker()) {
		return ctx.Err()
	}
	// The drivers of the CSI volumes on disk register before the kubelet looks at them.
	k.volumeManager.primePlugins(ctx)
	k.cleanupOrphans(ctx)
	k.readyOnce.Do(func() { close(k.ready) })
	k.log.Info("kubelet running")

	for _, loop := range []func(context.Context){k.relistLoop, k.housekeepingLoop, k.staticPodLoop, k.volumeManager.pluginLoop} {
		wg.Go(func() { loop(ctx) })
	}
	<-ctx.Done()
	wg.Wait()
	k.waitWorkers()
	k.prober.stopAll()
	return nil
}

func (k *Kubelet) housekeepingLoop(ctx context.Context) {
	ticker := k.clock.NewTicker(k.cfg.HousekeepingPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			k.cleanupOrphans(ctx)
			k.evictForLocalStorage(ctx)
		}
	}
}

func (k *Kubelet) podSeen(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName != k.cfg.NodeName {
		return
	}
	k.mu.Lock()
	if entry, ok := k.pods[pod.UID]; ok && entry.deleted && pod.DeletionTimestamp != nil {
		// A late update of a terminating pod whose object the kubelet has
		// deleted: it must not start the termination over.
		entry.pod = pod
		k.mu.Unlock()
		return
	}
	k.pods[pod.UID] = &podEntry{pod: pod}
	k.mu.Unlock()
	k.enqueue(pod.UID)
}

// keepNewer records the pod a status write returned, unless the informer
// delivered a newer state meanwhile: a deletion that arrived while the write
// was in flight must not be overwritten by the older answer, or the worker
// would never see the pod is terminating.
func (k *Kubelet) keepNewer(updated *corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if entry, ok := k.pods[updated.UID]; ok && !entry.deleted {
		entry.written = updated.ResourceVersion
		if newerPod(entry.pod, updated) {
			entry.pod = updated
		}
	}
}

// newerPod reports whether candidate is a later state of the pod than
// current, by resourceVersion (etcd revisions, so they compare as numbers).
// When either cannot be compared, the candidate wins unless current is
// terminating and the candidate is not.
func newerPod(current, candidate *corev1.Pod) bool {
	if current == nil {
		return true
	}
	order, ok := compareResourceVersions(candidate.ResourceVersion, current.ResourceVersion)
	if !ok {
		return current.DeletionTimestamp == nil || candidate.DeletionTimestamp != nil
	}
	return order > 0
}

// compareResourceVersions orders two resourceVersions as the etcd revisions they are: negative
// when a is earlier than b, positive when later; ok is false when either does not parse.
func compareResourceVersions(a, b string) (order int, ok bool) {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return cmp.Compare(x, y), true
}

// podUpdated records an update and wakes the pod's worker, except for the
// echo of the kubelet's own status write (the update carrying the
// resourceVersion that write returned): the worker wrote that state itself,
// and a sync for it would redo the runtime queries for nothing.
func (k *Kubelet) podUpdated(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	k.mu.Lock()
	entry, known := k.pods[pod.UID]
	echo := known && !entry.deleted && entry.written != "" && entry.written == pod.ResourceVersion && pod.Spec.NodeName == k.cfg.NodeName
	if echo {
		entry.pod = pod
	}
	k.mu.Unlock()
	if !echo {
		k.podSeen(obj)
	}
}

func (k *Kubelet) podGone(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	k.mu.Lock()
	if entry, ok := k.pods[pod.UID]; ok {
		entry.deleted = true
	} else {
		k.pods[pod.UID] = &podEntry{pod: pod, deleted: true}
	}
	k.mu.Unlock()
	k.enqueue(pod.UID)
}

// podByName finds a live pod of this node (podSource).
func (k *Kubelet) podByName(namespace, name string) *corev1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, e := range k.pods {
		if !e.deleted && e.pod != nil && e.pod.Namespace == namespace && e.pod.Name == name {
			return e.pod
		}
	}
	return nil
}

// livePods lists the live pods of this node (podSource).
func (k *Kubelet) livePods() []*corev1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []*corev1.Pod
	for _, e := range k.pods {
		if !e.deleted && e.pod != nil {
			out = append(out, e.pod)
		}
	}
	return out
}

func (k *Kubelet) podByUID(uid types.UID) (*corev1.Pod, bool, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	entry, ok := k.pods[uid]
	if !ok {
		return nil, false, false
	}
	return entry.pod, entry.deleted, true
}

func (k *Kubelet) forgetPod(uid types.UID) {
	k.mu.Lock()
	if entry, ok := k.pods[uid]; ok && entry.deleted {
		delete(k.pods, uid)
	}
	delete(k.waiting, uid)
	delete(k.admitted, uid)
	delete(k.resize, uid)
	delete(k.evicted, uid)
	k.mu.Unlock()
	k.volumes.forgetPod(uid)
	k.backoff.forgetPod(uid)
}

func (k *Kubelet) knownPodUIDs() map[types.UID]bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[types.UID]bool{}
	for uid, e := range k.pods {
		if !e.deleted {
			out[uid] = true
		}
	}
	return out
}
