package apiserver

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/queryparam"
)

// KubeletClientConfig is how the API server reaches kubelets for logs, exec, attach and
// port-forward: with its own client certificate, verifying the kubelet's serving certificate
// against the cluster CA.
type KubeletClientConfig struct {
	TLS *tls.Config
	// DefaultPort is used when a Node does not publish its kubelet port.
	DefaultPort int32
}

// podConnectSubresources are the pod subresources proxied to the pod's kubelet, with the kubelet
// path each maps to.
var podConnectSubresources = map[string]string{
	"log":         "containerLogs",
	"exec":        "exec",
	"attach":      "attach",
	"portforward": "portForward",
}

// streamingParams renames kubectl's exec/attach parameters to the kubelet's, as Kubernetes does.
var streamingParams = map[string]string{"stdin": "input", "stdout": "output", "stderr": "error"}

// boolParams are the connect options' booleans; they reach the kubelet as "true" or "false", read
// with Kubernetes' rules (so "True" or an empty value from a client library means true).
var boolParams = map[string]bool{
	"follow": true, "previous": true, "timestamps": true, "insecureSkipTLSVerifyBackend": true,
	"stdin": true, "stdout": true, "stderr": true, "tty": true,
}

// servePodConnect proxies pods/log, exec, attach and portforward to the kubelet of the pod's node,
// protocol upgrades (SPDY and WebSocket streams) included.
func servePodConnect(h *resourceHandler, w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	kubeletPath := podConnectSubresources[info.Subresource]
	gr := schema.GroupResource{Resource: "pods/" + info.Subresource}
	switch {
	case info.Subresource == "log" && info.Verb != "get":
		h.s.writeError(w, r, apierrors.NewMethodNotSupported(gr, info.Verb))
		return
	case info.Subresource != "log" && info.Verb != "get" && info.Verb != "create":
		h.s.writeError(w, r, apierrors.NewMethodNotSupported(gr, info.Verb))
		return
	}
	if err := h.authorizeStreamUpgrade(r, info); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	q := r.URL.Query()
	// CONNECT admission (webhooks registered for pods/exec, attach or portforward) before the pod
	// is looked at, as in Kubernetes.
	if err := h.admitConnect(r, info); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	if h.s.cfg.Kubelet == nil {
		h.s.writeError(w, r, apierrors.NewServiceUnavailable("no kubelet client is configured"))
		return
	}
	pod, err := getAs[*corev1.Pod](ctx, h, info.Namespace, info.Name)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	target := &url.URL{Scheme: "https"}
	if info.Subresource == "portforward" {
		target.Path = fmt.Sprintf("/%s/%s/%s", kubeletPath, pod.Namespace, pod.Name)
	} else {
		container, err := containerFor(pod, q.Get("container"))
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		target.Path = fmt.Sprintf("/%s/%s/%s/%s", kubeletPath, pod.Namespace, pod.Name, container)
	}
	if pod.Spec.NodeName == "" {
		h.s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name)))
		return
	}
	nodes := h.s.handlerForGroupResource(schema.GroupResource{Resource: "nodes"})
	if nodes == nil {
		h.s.writeError(w, r, apierrors.NewInternalError(fmt.Errorf("nodes are not served")))
		return
	}
	node, err := getAs[*corev1.Node](ctx, nodes, "", pod.Spec.NodeName)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	host, err := kubeletHost(node, h.s.cfg.Kubelet.DefaultPort)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	target.Host = host
	out := url.Values{}
	for k, vs := range q {
		if k == "container" {
			continue
		}
		if boolParams[k] {
			vs = []string{strconv.FormatBool(queryparam.Bool(q, k))}
		}
		if renamed, ok := streamingParams[k]; ok && info.Subresource != "log" {
			k = renamed
		}
		if k == "ports" {
			k = "port"
		}
		out[k] = vs
	}
	target.RawQuery = out.Encode()
	if info.Subresource == "log" && isWebSocketRequest(r) {
		h.serveLogWebSocket(w, r, target)
		return
	}
	if h.serveWebSocketStream(w, r, info, target) {
		return
	}

	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = target
			pr.Out.Host = target.Host
			// The caller's credentials are for the API server, not the kubelet.
			pr.Out.Header.Del("Authorization")
		},
		// One transport per server: a transport per request would leave its idle connections behind.
		Transport:     h.s.kubeletTransport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			h.s.writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("error dialing kubelet %s: %v", target.Host, err)))
		},
	}
	proxy.ServeHTTP(w, r)
}

// containerFor picks the container a log, exec or attach request names, defaulting to the only
// one, with Kubernetes' messages otherwise.
func containerFor(pod *corev1.Pod, name string) (string, error) {
	var names, initNames []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.InitContainers {
		initNames = append(initNames, c.Name)
	}
	if name == "" {
		if len(names) == 1 {
			return names[0], nil
		}
		msg := fmt.Sprintf("a container name must be specified for pod %s, choose one of: [%s]", pod.Name, strings.Join(names, " "))
		if len(initNames) > 0 {
			msg += fmt.Sprintf(" or one of the init containers: [%s]", strings.Join(initNames, " "))
		}
		return "", apierrors.NewBadRequest(msg)
	}
	for _, n := range append(names, initNames...) {
		if n == name {
			return name, nil
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return name, nil
		}
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
}

// kubeletHost is the host:port of a node's kubelet: its InternalIP (else any address) and the port
// the node publishes.
func kubeletHost(node *corev1.Node, defaultPort int32) (string, error) {
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if port == 0 {
		port = defaultPort
	}
	if port == 0 {
		port = 10250
	}
	var addr string
	for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName} {
		for _, a := range node.Status.Addresses {
			if a.Type == t && addr == "" {
				addr = a.Address
			}
		}
	}
	if addr == "" {
		return "", apierrors.NewBadRequest(fmt.Sprintf("node %s has no address to reach its kubelet", node.Name))
	}
	return net.JoinHostPort(addr, strconv.Itoa(int(port))), nil
}
