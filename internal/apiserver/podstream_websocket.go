package apiserver

import (
	"net/http"
	"net/url"

	"github.com/skiff-sh/skiff/internal/podstream"
	"github.com/skiff-sh/skiff/internal/request"
)

// streamSubresource reports the pod subresources that run something in a pod (exec, attach) or reach
// into its network (portforward).
func streamSubresource(subresource string) bool {
	return subresource == "exec" || subresource == "attach" || subresource == "portforward"
}

// needsCreateToo reports a request that must also be authorized as create: a WebSocket upgrade is
// a GET, so without this a role that reads pods/exec (get) could run commands, which a POST (the
// SPDY form) asks create for. Kubernetes checks both since v1.33
// (AuthorizePodWebsocketUpgradeCreatePermission, on by default); skiff follows it.
func needsCreateToo(info *RequestInfo, websocket bool) bool {
	return websocket && info.IsResourceRequest && info.APIGroup == "" && info.Resource == "pods" &&
		streamSubresource(info.Subresource) && info.Verb == "get"
}

// authorizeStreamUpgrade refuses, with Kubernetes' 403 Status, a WebSocket GET of pods/exec,
// attach or portforward whose caller may get but not create it.
func (h *resourceHandler) authorizeStreamUpgrade(r *http.Request, info *RequestInfo) error {
	if !needsCreateToo(info, podstream.IsWebSocket(r)) {
		return nil
	}
	user, _ := request.UserFrom(r.Context())
	create := *info
	create.Verb = "create"
	if ok, reason := h.s.cfg.Authorizer.Authorize(r.Context(), user, &create); !ok {
		return forbidden(&create, user, reason)
	}
	return nil
}

// serveWebSocketStream answers the WebSocket forms of exec, attach and port-forward in the API
// server and reports whether it did, as kube-apiserver's stream translator and tunneling handler
// do: exec and attach of any channel protocol (v5.channel.k8s.io down to channel.k8s.io) go on to
// the kubelet over SPDY; a port-forward tunnel (SPDY/3.1+portforward.k8s.io) is unwrapped into the
// kubelet's SPDY upgrade. Port-forward's WebSocket channel protocol and every SPDY request are
// proxied as they are. Proxying an exec WebSocket as it was let the runtime's streaming server
// (containerd's, which knows the channel protocols only up to v4) refuse v5 with a bare 403.
func (h *resourceHandler) serveWebSocketStream(w http.ResponseWriter, r *http.Request, info *RequestInfo, target *url.URL) bool {
	if !podstream.IsWebSocket(r) {
		return false
	}
	up := podstream.Upstream{URL: target, Transport: h.s.kubeletTransport}
	switch info.Subresource {
	case "exec", "attach":
		podstream.ServeExec(w, r, podstream.OptionsFromQuery(r.URL.Query()), up, h.s.log)
	case "portforward":
		if !podstream.IsTunnel(r) {
			return false
		}
		podstream.ServeTunnel(w, r, up, h.s.log)
	default:
		return false
	}
	return true
}
