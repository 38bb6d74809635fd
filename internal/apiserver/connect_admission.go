package apiserver

import (
	"context"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/apiserver/request"
	"github.com/skiff-sh/skiff/internal/queryparam"
)

// connectOptions is the object admission sees for a CONNECT to a pod subresource, as Kubernetes
// builds it from the request's query: PodExecOptions, PodAttachOptions or PodPortForwardOptions
// (with their kind set). Other subresources (log is a read) are not admitted: nil.
func connectOptions(subresource string, q url.Values) runtime.Object {
	b := func(key string) bool { return queryparam.Bool(q, key) }
	switch subresource {
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
	}
	return nil
}

// admitConnect runs the admission chain for a CONNECT (exec, attach, port-forward) as Kubernetes
// does before it opens the stream: mutating then validating, with the connect options as the
// object, so a webhook registered for CONNECT on pods/attach can refuse `kubectl attach`.
func (h *resourceHandler) admitConnect(ctx context.Context, info *RequestInfo, q url.Values) error {
	opts := connectOptions(info.Subresource, q)
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
