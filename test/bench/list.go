package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ListTarget is an API server under measurement: its client config and the processes whose CPU and
// memory count as the server's.
type ListTarget struct {
	Name   string
	Config *rest.Config
	// PIDs are the server's processes (skiff: one; upstream: kube-apiserver and etcd).
	PIDs []int
	// APIServerPID is the process whose CPU and allocations a LIST costs.
	APIServerPID int
}

// ListOptions tune RunList.
type ListOptions struct {
	Pods        int
	Namespace   string
	Concurrency int
	Lists       int
	Encodings   []string // "json", "protobuf"
	// ParallelLists, when above zero, ends the run with that many LISTs of all pods at once (JSON,
	// bodies streamed away by the client), sampling the server's RSS meanwhile.
	ParallelLists int
}

// ListResult is one target's figures.
type ListResult struct {
	Target     string
	LoadTime   time.Duration
	PodBytes   int // JSON size of one stored pod
	RSSAfter   map[int]int64
	PerEncode  []ListEncodingResult
	LoadAvgEnd string
	// Parallel is the concurrent-LIST phase (zero when not run).
	Parallel ParallelListResult
}

// ParallelListResult is what N LISTs of all pods at once cost the server's memory.
type ParallelListResult struct {
	Lists int
	// Failed counts the LISTs that got an error instead of every pod (a server that runs out of
	// time or memory under them).
	Failed int
	// FirstError is the first of those errors.
	FirstError string
	// Took is until the last of them was read.
	Took time.Duration
	// RSSBefore, RSSPeak and RSSAfter are the server processes' summed RSS before, at the highest
	// 50 ms sample during, and 10 s after the LISTs.
	RSSBefore, RSSPeak, RSSAfter int64
}

// ListEncodingResult is the LIST figures for one encoding.
type ListEncodingResult struct {
	Encoding     string
	Latency      latencySummary
	BodyBytes    int
	CPUPerList   time.Duration
	AllocPerList int64 // bytes allocated by the API server per LIST (Go runtime counter); -1 unknown
}

// benchPod is a pod as a Deployment would make it (labels, a resourceful container with env,
// ports, probes, mounts, tolerations), about 2.5 KB of JSON once stored. No scheduler serves its
// schedulerName, so nothing changes it while it is listed.
func benchPod(namespace string, i int) *corev1.Pod {
	hash := fmt.Sprintf("%08x", uint32(i/100)*2654435761)[:8]
	app := "density-" + strconv.Itoa(i/100)
	env := make([]corev1.EnvVar, 0, 6)
	for k := range 6 {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("BENCH_ENV_%d", k), Value: fmt.Sprintf("value-%d-%s", k, strings.Repeat("v", 24))})
	}
	f := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%s-%05d", app, hash, i), Namespace: namespace,
			Labels:      map[string]string{"app": app, "pod-template-hash": hash, "tier": "backend", "bench": "list"},
			Annotations: map[string]string{"bench.skiff.sh/revision": "3", "bench.skiff.sh/created-by": "listbench density template"},
		},
		Spec: corev1.PodSpec{
			SchedulerName:                 "listbench-no-scheduler",
			AutomountServiceAccountToken:  &f,
			TerminationGracePeriodSeconds: ptrTo(int64(30)),
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.k8s.io/pause:3.10", ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"/pause"}, Args: []string{"--listen=:8080", "--log-level=info"},
				Env:   env,
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}, {Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}, PeriodSeconds: 10},
				VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}},
			}},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}

func ptrTo[T any](v T) *T { return &v }

// podNamespaceClient is a protobuf client of t with namespace and its default ServiceAccount in
// place (upstream's ServiceAccount admission wants the account, and no controller makes it when
// only kube-apiserver runs): where listbench and membench create their pods.
func podNamespaceClient(ctx context.Context, t ListTarget, namespace string) (kubernetes.Interface, error) {
	cs, err := clientFor(t.Config, ContentTypeProtobuf)
	if err != nil {
		return nil, err
	}
	if err := ensureNamespace(ctx, cs, namespace); err != nil {
		return nil, err
	}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("service account: %w", err)
	}
	return cs, nil
}

// RunList loads opts.Pods pods into the target and measures LIST of all pods per encoding.
func RunList(ctx context.Context, t ListTarget, opts ListOptions) (ListResult, error) {
	res := ListResult{Target: t.Name}
	cs, err := podNamespaceClient(ctx, t, opts.Namespace)
	if err != nil {
		return res, err
	}
	start := time.Now()
	if err := loadPodsProgress(ctx, cs, opts, nil); err != nil {
		return res, err
	}
	res.LoadTime = time.Since(start)
	one, err := cs.CoreV1().Pods(opts.Namespace).Get(ctx, benchPod(opts.Namespace, 0).Name, metav1.GetOptions{})
	if err != nil {
		return res, err
	}
	if data, err := jsonSize(one); err == nil {
		res.PodBytes = data
	}
	time.Sleep(3 * time.Second) // let the server settle (caches, GC) before its RSS is read
	res.RSSAfter = map[int]int64{}
	for _, pid := range t.PIDs {
		res.RSSAfter[pid] = rssOf(pid)
	}
	for _, enc := range opts.Encodings {
		r, err := measureLists(ctx, t, enc, opts)
		if err != nil {
			return res, err
		}
		res.PerEncode = append(res.PerEncode, r)
	}
	if opts.ParallelLists > 0 {
		p, err := parallelLists(ctx, t, opts.ParallelLists)
		if err != nil {
			return res, err
		}
		res.Parallel = p
	}
	res.LoadAvgEnd = loadAvg()
	return res, nil
}

func rssSum(pids []int) int64 {
	var total int64
	for _, pid := range pids {
		total += rssOf(pid)
	}
	return total
}

// parallelLists runs n LISTs of all pods at once and samples the server's RSS meanwhile.
func parallelLists(ctx context.Context, t ListTarget, n int) (ParallelListResult, error) {
	r := ParallelListResult{Lists: n, RSSBefore: rssSum(t.PIDs)}
	cs, err := kubernetes.NewForConfig(t.Config)
	if err != nil {
		return r, err
	}
	done := make(chan struct{})
	var peak atomic.Int64
	peak.Store(r.RSSBefore)
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if v := rssSum(t.PIDs); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/pods").SetHeader("Accept", "application/json").Stream(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer body.Close()
			if _, err := io.Copy(io.Discard, body); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	r.Took = time.Since(start)
	close(done)
	sampler.Wait()
	close(errs)
	for err := range errs {
		if r.Failed == 0 {
			r.FirstError = err.Error()
		}
		r.Failed++
	}
	r.RSSPeak = peak.Load()
	select {
	case <-ctx.Done():
		return r, ctx.Err()
	case <-time.After(10 * time.Second):
	}
	r.RSSAfter = rssSum(t.PIDs)
	return r, nil
}

func measureLists(ctx context.Context, t ListTarget, enc string, opts ListOptions) (ListEncodingResult, error) {
	accept := "application/json"
	if enc == "protobuf" {
		accept = ContentTypeProtobuf
	}
	r := ListEncodingResult{Encoding: enc, AllocPerList: -1}
	cs, err := kubernetes.NewForConfig(t.Config)
	if err != nil {
		return r, err
	}
	list := func() (int, error) {
		body, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/pods").SetHeader("Accept", accept).DoRaw(ctx)
		return len(body), err
	}
	for range 2 { // warm up: caches filled, encodings memoized where the server keeps them
		if _, err := list(); err != nil {
			return r, fmt.Errorf("list %s: %w", enc, err)
		}
	}
	allocBefore, allocErr := allocBytes(ctx, cs)
	cpuBefore, err := ProcessCPU(t.APIServerPID)
	if err != nil {
		return r, err
	}
	samples := make([]time.Duration, 0, opts.Lists)
	for range opts.Lists {
		start := time.Now()
		n, err := list()
		if err != nil {
			return r, fmt.Errorf("list %s: %w", enc, err)
		}
		samples = append(samples, time.Since(start))
		r.BodyBytes = n
	}
	cpuAfter, err := ProcessCPU(t.APIServerPID)
	if err != nil {
		return r, err
	}
	if allocAfter, err := allocBytes(ctx, cs); err == nil && allocErr == nil {
		r.AllocPerList = (allocAfter - allocBefore) / int64(opts.Lists)
	}
	r.Latency = summarize(samples)
	r.CPUPerList = (cpuAfter - cpuBefore) / time.Duration(opts.Lists)
	return r, nil
}

// allocBytes reads go_memstats_alloc_bytes_total from the server's /metrics.
func allocBytes(ctx context.Context, cs kubernetes.Interface) (int64, error) {
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_alloc_bytes_total "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int64(f), err
		}
	}
	return 0, fmt.Errorf("no go_memstats_alloc_bytes_total in /metrics")
}

// rssOf is VmRSS of pid in bytes (0 when unknown).
func rssOf(pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func jsonSize(obj any) (int, error) {
	data, err := json.Marshal(obj)
	return len(data), err
}
