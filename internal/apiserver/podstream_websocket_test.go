package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// streamKubelet is a kubelet as skiff's was before it translated WebSockets, in front of a
// runtime like containerd's: exec over SPDY (remotecommand v4: it prints its command line) and
// port-forward over SPDY (it echoes a data stream); an exec WebSocket meets the runtime's own
// handshake, which knows the channel protocols up to v4 only and refuses others with a bare 403.
func streamKubelet(t *testing.T) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var seen []string
	var handlers sync.WaitGroup
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1)
		defer handlers.Done()
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			websocket.Server{Handshake: func(cfg *websocket.Config, _ *http.Request) error {
				for _, p := range cfg.Protocol {
					if p == "v4.channel.k8s.io" || p == "channel.k8s.io" {
						cfg.Protocol = []string{p}
						return nil
					}
				}
				return fmt.Errorf("requested protocol(s) are not supported: %v", cfg.Protocol)
			}, Handler: func(ws *websocket.Conn) { _ = ws.Close() }}.ServeHTTP(w, r)
			return
		}
		protocols, kinds := []string{"v4.channel.k8s.io"}, 2 // stdout and error
		if strings.HasPrefix(r.URL.Path, "/portForward/") {
			protocols = []string{"portforward.k8s.io"}
		}
		if _, err := httpstream.Handshake(r, w, protocols); err != nil {
			return
		}
		arrived := make(chan httpstream.Stream, kinds)
		conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
			arrived <- s
			return nil
		})
		if conn == nil {
			return
		}
		defer conn.Close()
		streams := map[string]httpstream.Stream{}
		for range kinds {
			select {
			case s := <-arrived:
				streams[s.Headers().Get(corev1.StreamType)] = s
			case <-time.After(30 * time.Second):
				t.Errorf("fake kubelet: %d streams arrived", len(streams))
				return
			}
		}
		if data := streams[corev1.StreamTypeData]; data != nil {
			body, _ := io.ReadAll(data)
			_, _ = data.Write(append([]byte("echo "), body...))
		} else {
			_, _ = io.WriteString(streams[corev1.StreamTypeStdout], strings.Join(r.URL.Query()["command"], " "))
			status, _ := json.Marshal(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
			_, _ = streams[corev1.StreamTypeError].Write(status)
		}
		for _, s := range streams {
			_ = s.Close()
		}
	}))
	srv.StartTLS()
	t.Cleanup(func() {
		srv.Close()
		handlers.Wait()
	})
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// getOnly lets system:masters do everything and the user "reader" only get (and list and watch).
type getOnly struct{}

func (getOnly) Authorize(_ context.Context, user *UserInfo, info *RequestInfo) (bool, string) {
	for _, g := range user.Groups {
		if g == "system:masters" {
			return true, ""
		}
	}
	return user.Name == "reader" && (info.Verb == "get" || info.Verb == "list" || info.Verb == "watch"), ""
}

// TestPodStreamsOverWebSocket: exec over v5.channel.k8s.io and port-forward tunneled in a
// WebSocket reach a kubelet that speaks SPDY (the API server translates, as kube-apiserver does;
// proxied as they were, the runtime's handshake refused v5 with a bare 403), and a WebSocket GET
// of pods/exec needs create as well as get.
func TestPodStreamsOverWebSocket(t *testing.T) {
	c := startTestCluster(t, func(cfg *Config) { cfg.Authorizer = getOnly{} })
	ctx := context.Background()
	ns := c.namespace(t, "streams")
	kubelet, seen := streamKubelet(t)
	c.api.cfg.Kubelet = &KubeletClientConfig{TLS: kubelet.Client().Transport.(*http.Transport).TLSClientConfig}
	c.api.kubeletTransport = kubelet.Client().Transport.(*http.Transport)
	if _, err := c.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	forceUpdate(t, c, "nodes", "", "n1", func(o runtime.Object) {
		n := o.(*corev1.Node)
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
		n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(mustAtoi(t, port(t, kubelet)))
	})
	pod := makePod("web").ns(ns).obj()
	pod.Spec.NodeName = "n1"
	if _, err := c.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podURL := c.server.URL + "/api/v1/namespaces/" + ns + "/pods/web"

	executor, err := remotecommand.NewWebSocketExecutor(c.admin, http.MethodGet, podURL+"/exec?command=echo&command=hi&stdout=true")
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	if err := executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout}); err != nil || stdout.String() != "echo hi" {
		t.Fatalf("v5 exec: stdout %q, err %v", stdout.String(), err)
	}
	if got := seen(); len(got) != 1 || got[0] != "POST /exec/"+ns+"/web/app?command=echo&command=hi&output=true" {
		t.Errorf("kubelet saw %q, want the exec as SPDY", got)
	}

	u, err := url.Parse(podURL + "/portforward?ports=80")
	if err != nil {
		t.Fatal(err)
	}
	dialer, err := portforward.NewSPDYOverWebsocketDialer(u, c.admin)
	if err != nil {
		t.Fatal(err)
	}
	conn, protocol, err := dialer.Dial(portforward.PortForwardProtocolV1Name)
	if err != nil {
		t.Fatalf("port-forward tunnel: %v", err)
	}
	defer conn.Close()
	headers := http.Header{}
	headers.Set(corev1.PortHeader, "80")
	headers.Set(corev1.PortForwardRequestIDHeader, "0")
	headers.Set(corev1.StreamType, corev1.StreamTypeError)
	if _, err := conn.CreateStream(headers); err != nil {
		t.Fatal(err)
	}
	headers.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := conn.CreateStream(headers)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(data, "ping")
	_ = data.Close()
	if got, err := io.ReadAll(data); protocol != portforward.PortForwardProtocolV1Name || string(got) != "echo ping" || err != nil {
		t.Errorf("port-forward tunnel: protocol %q, data %q, err %v", protocol, got, err)
	}

	// A reader (get, not create) may not run commands through a WebSocket GET.
	reader := rest.CopyConfig(c.admin)
	reader.Impersonate = rest.ImpersonationConfig{UserName: "reader"}
	executor, err = remotecommand.NewWebSocketExecutor(reader, http.MethodGet, podURL+"/exec?command=id&stdout=true")
	if err != nil {
		t.Fatal(err)
	}
	err = executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard})
	if err == nil || !strings.Contains(err.Error(), `User "reader" cannot create resource "pods/exec" in API group "" in the namespace "streams"`) {
		t.Errorf("reader's websocket exec: %v, want a 403 for create", err)
	}
}
