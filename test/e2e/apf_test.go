package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestAPIPriorityAndFairness: on a real node, one user (impersonated by the admin) floods LISTs at
// high concurrency and gets 429s, while another user's LISTs, the admin's kubectl and the node's
// own controllers keep being served.
func TestAPIPriorityAndFairness(t *testing.T) {
	// 120 seats: global-default gets 10, a LIST of 500 ConfigMaps takes 5.
	c := newCluster(t, "--max-requests-inflight", "120")
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	const ns = "default"
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range 500 {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("apf-%03d", i)}, Data: map[string]string{"k": strings.Repeat("v", 200)}}
			if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// Both users may read (RBAC judges the impersonated user).
	mustContain(t, c.kubectl("create", "clusterrolebinding", "apf-view", "--clusterrole=view", "--user=mallory", "--user=bob"), "created")
	tlsCfg, addr := c.adminTLS(t)
	listURL := "https://" + addr + "/api/v1/namespaces/" + ns + "/configmaps"
	var firstOther atomic.Value
	get := func(hc *http.Client, user string, groups ...string) (int, time.Duration) {
		req, _ := http.NewRequest(http.MethodGet, listURL, nil)
		req.Header.Set("Impersonate-User", user)
		for _, g := range groups {
			req.Header.Add("Impersonate-Group", g)
		}
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			firstOther.CompareAndSwap(nil, err.Error())
			return 0, time.Since(start)
		}
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusTooManyRequests {
			firstOther.CompareAndSwap(nil, resp.Status)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, time.Since(start)
	}
	newClient := func(conns int) *http.Client {
		tr := &http.Transport{TLSClientConfig: tlsCfg.Clone(), MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	}

	// One user is one flow: global-default shuffle-shards it onto a hand of 6 queues of 50, 300
	// places, beside its few executing seats. More flooders than that overflow the queues for
	// certain; with 300 a 429 came only when a LIST waited out its queue time, which LISTs from
	// memory made rare (no 429 in two minutes, 113,000 served).
	const flooders = 400
	floodClient := newClient(flooders)
	var served, rejected, other atomic.Int64
	stop := make(chan struct{})
	var floodWG sync.WaitGroup
	for range flooders {
		floodWG.Add(1)
		go func() {
			defer floodWG.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				switch code, _ := get(floodClient, "mallory"); code {
				case http.StatusOK:
					served.Add(1)
				case http.StatusTooManyRequests:
					rejected.Add(1)
				default:
					other.Add(1)
				}
			}
		}()
	}
	stopFlood := sync.OnceFunc(func() { close(stop); floodWG.Wait() })
	t.Cleanup(stopFlood)
	deadline := time.Now().Add(2 * time.Minute)
	for rejected.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no 429 within 2 minutes (%d served, %d other, first: %v)", served.Load(), other.Load(), firstOther.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}

	// During the flood: bob's LISTs, the admin's kubectl, and the controllers turning a new
	// Deployment into a ReplicaSet and Pods.
	bobClient := newClient(1)
	var bob []time.Duration
	var bobFailed []int
	for range 10 {
		code, d := get(bobClient, "bob")
		if code != http.StatusOK {
			bobFailed = append(bobFailed, code)
			continue
		}
		bob = append(bob, d)
	}
	var admin []time.Duration
	for range 5 {
		start := time.Now()
		mustContain(t, c.kubectl("get", "configmaps", "apf-001"), "apf-001")
		admin = append(admin, time.Since(start))
	}
	start := time.Now()
	mustContain(t, c.kubectl("create", "deployment", "apf-web", "--image=registry.invalid/web:1", "--replicas=2"), "created")
	for {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=apf-web"})
		if err == nil && len(pods.Items) == 2 {
			break
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("the controllers did not create the Deployment's pods during the flood")
		}
		time.Sleep(200 * time.Millisecond)
	}
	controllers := time.Since(start)
	stillRejected := rejected.Load()
	stopFlood()

	t.Logf("flood of %d concurrent LISTs of 500 ConfigMaps by one user: %d served, %d rejected 429, %d other (first: %v)", flooders, served.Load(), rejected.Load(), other.Load(), firstOther.Load())
	t.Logf("bob's LISTs during the flood: %s, failures %v", summary(bob), bobFailed)
	t.Logf("admin kubectl get during the flood: %s", summary(admin))
	t.Logf("Deployment to 2 Pods by the controllers during the flood: %v", controllers.Round(time.Millisecond))
	if len(bobFailed) > 0 {
		t.Errorf("bob's LISTs failed during the flood: %v", bobFailed)
	}
	if stillRejected == 0 {
		t.Error("the flood was never rejected")
	}
	mustContain(t, c.kubectl("get", "--raw", "/metrics"), `apiserver_flowcontrol_rejected_requests_total{flow_schema="global-default",priority_level="global-default",reason=`)
}

func summary(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("n=%d median=%v max=%v", len(s), s[len(s)/2].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
}
