package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// heapInUse is the node's Go heap in use after a full garbage collection (forced through the
// profiling endpoint's gc=1), read from its /metrics.
func (c *cluster) heapInUse(t *testing.T) int64 {
	t.Helper()
	tlsCfg, _ := c.adminTLS(t)
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg.Clone()}}
	base := "https://127.0.0.1:" + strconv.Itoa(c.ports[0])
	if resp, err := hc.Get(base + "/debug/pprof/heap?gc=1"); err == nil {
		resp.Body.Close()
	}
	resp, err := hc.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_inuse_bytes "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatal(err)
			}
			return int64(f)
		}
	}
	t.Fatal("no go_memstats_heap_inuse_bytes in /metrics")
	return 0
}

// TestHeapReturnsAfterABurst: a burst of 100 KB ConfigMap updates raises the node's heap (etcd's
// raft log, the watch cache's history), and once the burst is over the heap comes back within
// twice where it started, plus what etcd's raft log may keep by design: at most 600 entries
// (a snapshot every 500, 100 kept for slow followers), 60 MB of these writes, wherever in its
// snapshot cycle the burst happened to end. With etcd's defaults (10,000 and 5,000) it stayed at
// over a gigabyte.
func TestHeapReturnsAfterABurst(t *testing.T) {
	c := newCluster(t)
	cs := c.clientset(t)
	ctx := context.Background()
	start := c.heapInUse(t)
	blob := strings.Repeat("x", 100<<10)
	const objects, writers = 10, 4
	for i := range objects {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%d", i)}, Data: map[string]string{"v": blob}}
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	burstEnd := time.Now().Add(20 * time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	updates := 0
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(burstEnd); i++ {
				if err := touch(ctx, cs, fmt.Sprintf("big-%d", (w+i*writers)%objects), i); err == nil {
					mu.Lock()
					updates++
					mu.Unlock()
				}
			}
		}()
	}
	during := c.heapInUse(t)
	wg.Wait()
	const raftRetention = 600 * 100 << 10
	var after int64
	eventually(t, 2*time.Minute, func() error {
		after = c.heapInUse(t)
		if after > 2*start+raftRetention {
			return fmt.Errorf("heap %d MiB after the burst, started at %d MiB", after>>20, start>>20)
		}
		return nil
	})
	t.Logf("heap in use: start %d MiB, during %d MiB, after %d MiB (%d updates of 100 KB)", start>>20, during>>20, after>>20, updates)
}

func touch(ctx context.Context, cs kubernetes.Interface, name string, i int) error {
	cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cm.Data["n"] = strconv.Itoa(i)
	_, err = cs.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
