package apiserver

import (
	"net/http"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/queryparam"
	"github.com/skiff-sh/skiff/internal/request"
)

// connectOptions is the object admission sees for a CONNECT, as Kubernetes builds it from the
// request (with its kind set): PodExecOptions, PodAttachOptions or PodPortForwardOptions from the
// query; PodProxyOptions, ServiceProxyOptions or NodeProxyOptions with the path that follows
// ".../proxy/". Other subresources (log is a read) are not admitted: nil.
func connectOptions(r *http.Request, info *RequestInfo) runtime.Object {
	q := r.URL.Query()
	b := func(key string) bool { return queryparam.Bool(q, key) }
	switch info.Subresource {
	case "exec":
		return &corev1.PodExecOptions{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodExecOptions"},
			Stdin:    b("stdin"), Stdout: b("stdout"), Stderr: b("stderr"), TTY: b("tty"),
			Container: q.Get("container"), Command: q["command"],
		}
	case "attach":
		return &corev1.PodAttachOptions{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodAttachOptions"},
			Stdin:    b("stdin"), Stdout: b("stdout"), Stderr: b("stderr"), TTY: b("tty"), Container: q.Get("container"),
		}
	case "portforward":
		opts := &corev1.PodPortForwardOptions{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodPortForwardOptions"}}
		for _, p := range q["ports"] {
			if n, err := strconv.ParseInt(p, 10, 32); err == nil {
				opts.Ports = append(opts.Ports, int32(n))
			}
		}
		return opts
	case "proxy":
		path := strings.TrimPrefix(proxyPath(r, info), "/")
		switch info.Resource {
		case "pods":
			return &corev1.PodProxyOptions{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodProxyOptions"}, Path: path}
		case "services":
			return &corev1.ServiceProxyOptions{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceProxyOptions"}, Path: path}
		case "nodes":
			return &corev1.NodeProxyOptions{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "NodeProxyOptions"}, Path: path}
		}
	}
	return nil
}

// admitConnect runs the admission chain for a CONNECT (exec, attach, port-forward, proxy) as
// Kubernetes does before it opens the stream: mutating then validating, with the connect options
// as the object, so a webhook registered for CONNECT on pods/attach can refuse `kubectl attach`.
func (h *resourceHandler) admitConnect(r *http.Request, info *RequestInfo) error {
	ctx := r.Context()
	opts := connectOptions(r, info)
	if opts == nil {
		return nil
	}
	user, _ := request.UserFrom(ctx)
	attrs := &AdmissionAttributes{
		Verb: "connect", Resource: h.res, Subresource: info.Subresource, Namespace: info.Namespace, Name: info.Name,
		Object: opts, User: user, Kind: opts.GetObjectKind().GroupVersionKind(),
	}
	if err := h.s.admit(ctx, attrs); err != nil {
		return err
	}
	return h.s.validateAdmission(ctx, attrs)
}

// withConnectAdmission admits a CONNECT before serve handles it (the proxy subresources).
func withConnectAdmission(serve subresourceFunc) subresourceFunc {
	return func(h *resourceHandler, w http.ResponseWriter, r *http.Request, info *RequestInfo) {
		if err := h.admitConnect(r, info); err != nil {
			h.s.writeError(w, r, err)
			return
		}
		serve(h, w, r, info)
	}
}
