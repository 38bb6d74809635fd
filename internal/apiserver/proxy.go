package apiserver

//lint:file-ignore SA1019 core/v1 Endpoints are deprecated, not removed: services/proxy picks from them, as Kubernetes does.

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/storage"
)

// The proxy subresources (pods/proxy, services/proxy, nodes/proxy) forward any method, upgrades
// included, to a backend the object names: /api/v1/namespaces/ns/pods/[scheme:]name[:port]/proxy/path.
// Like kube-apiserver, they pass the rest of the path and the query on, drop the caller's
// credentials (they are for the API server), and answer 503 when the backend cannot be reached.

// newProxyTransport is how the API server reaches pods and services: plain HTTP, or HTTPS without
// verifying the backend, as kube-apiserver's proxy transport does when no proxy client certificate
// is configured (pods serve whatever certificate they like).
func newProxyTransport() *http.Transport {
	return &http.Transport{
		Proxy:             nil,
		DialContext:       (&net.Dialer{}).DialContext,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see above: Kubernetes' behaviour.
		ForceAttemptHTTP2: false,
	}
}

// splitSchemeNamePort reads "name", "name:port" or "scheme:name:port" (scheme http, https or empty;
// an empty port means the default one), as Kubernetes' SplitSchemeNamePort does.
func splitSchemeNamePort(id string) (scheme, name, port string, ok bool) {
	parts := strings.Split(id, ":")
	switch len(parts) {
	case 1:
		name = parts[0]
	case 2:
		name, port = parts[0], parts[1]
	case 3:
		scheme, name, port = parts[0], parts[1], parts[2]
	default:
		return "", "", "", false
	}
	if name == "" || (scheme != "" && scheme != "http" && scheme != "https") {
		return "", "", "", false
	}
	return scheme, name, port, true
}

// proxyPath is what follows "<name>/proxy" in the request path, leading slash kept ("" when the
// request ends at "proxy").
func proxyPath(r *http.Request, info *RequestInfo) string {
	_, rest := splitProxyPath(r, info)
	return rest
}

// splitProxyPath splits the request path into the API path the backend's root appears under
// (".../pods/web/proxy") and what follows it.
func splitProxyPath(r *http.Request, info *RequestInfo) (prefix, rest string) {
	// The first match is the route itself: namespaces and names cannot contain "/".
	marker := "/" + info.Resource + "/" + info.Name + "/proxy"
	i := strings.Index(r.URL.Path, marker)
	if i < 0 {
		return "", ""
	}
	return r.URL.Path[:i+len(marker)], r.URL.Path[i+len(marker):]
}

// defaultProxyAddressAllowed reports whether the API server may dial ip for a pod or service: a global unicast
// address, as Kubernetes requires (never loopback, link-local or multicast). Tests replace it to
// reach servers on 127.0.0.x.
func defaultProxyAddressAllowed(ip net.IP) bool { return ip != nil && ip.IsGlobalUnicast() }

// serveProxy forwards the request to target through transport.
func (h *resourceHandler) serveProxy(w http.ResponseWriter, r *http.Request, info *RequestInfo, target *url.URL, transport http.RoundTripper) {
	prefix, rest := splitProxyPath(r, info)
	if proxyRootRedirect(w, r, rest) {
		return
	}
	target.Path = rest
	if target.Path == "" {
		target.Path = "/"
	}
	target.RawQuery = r.URL.RawQuery
	rw := proxyRewrite{prefix: prefix, backendHost: target.Host, requestHost: r.Host}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = target
			pr.Out.Host = target.Host
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del("Impersonate-User")
			pr.Out.Header.Del("Impersonate-Group")
			rw.forwardedHeaders(pr.Out, pr.In)
		},
		ModifyResponse: rw.modifyResponse,
		Transport:      transport,
		FlushInterval:  -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			h.s.writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach service: %v", err)))
		},
	}
	proxy.ServeHTTP(w, r)
}

// servePodProxy serves pods/proxy: to the pod's IP, on the port named in the URL or else the first
// port its containers declare.
func servePodProxy(h *resourceHandler, w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	scheme, name, port, ok := splitSchemeNamePort(info.Name)
	if !ok {
		h.s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid pod request %q", info.Name)))
		return
	}
	pod, err := getAs[*corev1.Pod](r.Context(), h, info.Namespace, name)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	if port == "" {
		for _, c := range pod.Spec.Containers {
			if len(c.Ports) > 0 {
				port = strconv.Itoa(int(c.Ports[0].ContainerPort))
				break
			}
		}
	}
	podIP := pod.Status.PodIP
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	if !h.s.proxyAddressAllowed(net.ParseIP(podIP)) {
		h.s.writeError(w, r, apierrors.NewBadRequest("address not allowed"))
		return
	}
	target := &url.URL{Scheme: scheme, Host: podIP}
	if target.Scheme == "" {
		target.Scheme = "http"
	}
	if port != "" {
		target.Host = net.JoinHostPort(podIP, port)
	}
	h.serveProxy(w, r, info, target, h.s.proxyTransport)
}

// serveServiceProxy serves services/proxy: to a ready endpoint of the service, on the service port
// named (or numbered) in the URL, picking a subset and an address at random as Kubernetes does.
// Only addresses that belong to a pod of the service's namespace with that IP are used.
func serveServiceProxy(h *resourceHandler, w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	ctx := r.Context()
	scheme, name, portName, ok := splitSchemeNamePort(info.Name)
	if !ok {
		h.s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", info.Name)))
		return
	}
	if scheme == "" {
		scheme = "http"
	}
	if num, err := strconv.ParseInt(portName, 10, 32); err == nil {
		svc, err := getAs[*corev1.Service](ctx, h, info.Namespace, name)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		found := false
		for _, p := range svc.Spec.Ports {
			if int64(p.Port) == num {
				portName, found = p.Name, true
				break
			}
		}
		if !found {
			h.s.writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", num, name)))
			return
		}
	}
	endpoints := h.s.handlerForGroupResource(schema.GroupResource{Resource: "endpoints"})
	pods := h.s.handlerForGroupResource(schema.GroupResource{Resource: "pods"})
	if endpoints == nil || pods == nil {
		h.s.writeError(w, r, apierrors.NewInternalError(fmt.Errorf("endpoints or pods are not served")))
		return
	}
	eps, err := getAs[*corev1.Endpoints](ctx, endpoints, info.Namespace, name)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	// validPod reports whether addr is what its target pod says it is: endpoints are written by
	// clients, and a hand-written one must not make the API server dial an arbitrary address.
	validPod := func(addr corev1.EndpointAddress) bool {
		if addr.TargetRef == nil || addr.TargetRef.Kind != "Pod" || addr.TargetRef.Namespace != info.Namespace {
			return false
		}
		obj, err := pods.st.Get(ctx, info.Namespace, addr.TargetRef.Name, storage.GetOptions{})
		if err != nil {
			return false
		}
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return false
		}
		for _, ip := range pod.Status.PodIPs {
			if ip.IP == addr.IP {
				return true
			}
		}
		return pod.Status.PodIP == addr.IP
	}
	if len(eps.Subsets) > 0 {
		start := rand.IntN(len(eps.Subsets))
		for i := range eps.Subsets {
			ss := &eps.Subsets[(start+i)%len(eps.Subsets)]
			if len(ss.Addresses) == 0 {
				continue
			}
			for _, p := range ss.Ports {
				if p.Name != portName {
					continue
				}
				first := rand.IntN(len(ss.Addresses))
				for try := range ss.Addresses {
					addr := ss.Addresses[(first+try)%len(ss.Addresses)]
					if !validPod(addr) || !h.s.proxyAddressAllowed(net.ParseIP(addr.IP)) {
						continue
					}
					target := &url.URL{Scheme: scheme, Host: net.JoinHostPort(addr.IP, strconv.Itoa(int(p.Port)))}
					h.serveProxy(w, r, info, target, h.s.proxyTransport)
					return
				}
			}
		}
	}
	h.s.writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", info.Name)))
}

// serveNodeProxy serves nodes/proxy: to the node's kubelet over the API server's kubelet client
// certificate when no port or the kubelet's port is named, else to that port of the node with the
// pod proxy's transport.
func serveNodeProxy(h *resourceHandler, w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	scheme, name, port, ok := splitSchemeNamePort(info.Name)
	if !ok {
		h.s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid node request %q", info.Name)))
		return
	}
	if h.s.cfg.Kubelet == nil {
		h.s.writeError(w, r, apierrors.NewServiceUnavailable("no kubelet client is configured"))
		return
	}
	node, err := getAs[*corev1.Node](r.Context(), h, "", name)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	kubelet, err := kubeletHost(node, h.s.cfg.Kubelet.DefaultPort)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	host, kubeletPort, err := net.SplitHostPort(kubelet)
	if err != nil {
		h.s.writeError(w, r, apierrors.NewInternalError(err))
		return
	}
	// Kubernetes also refuses loopback here; skiff allows it, since a single-node cluster's kubelet
	// may well be registered on loopback, and the kubelet port is reached with mutual TLS anyway.
	if ip := net.ParseIP(host); ip != nil && (ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast()) {
		h.s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("address not allowed: %s", host)))
		return
	}
	if port == "" || port == kubeletPort {
		h.serveProxy(w, r, info, &url.URL{Scheme: "https", Host: kubelet}, h.s.kubeletTransport)
		return
	}
	if scheme == "" {
		scheme = "http"
	}
	h.serveProxy(w, r, info, &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, port)}, h.s.proxyTransport)
}

// getAs reads one object of h's resource as T (a pod, a node), or answers why it cannot: the
// store's error, or an internal error if the store holds another type.
func getAs[T runtime.Object](ctx context.Context, h *resourceHandler, namespace, name string) (T, error) {
	var zero T
	obj, err := h.st.Get(ctx, namespace, name, storage.GetOptions{})
	if err != nil {
		return zero, err
	}
	typed, ok := obj.(T)
	if !ok {
		return zero, apierrors.NewInternalError(fmt.Errorf("%s store returned %T", h.res.Plural, obj))
	}
	return typed, nil
}
