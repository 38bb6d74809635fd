package apiserver

import (
	"context"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/flowcontrol"
	"github.com/skiff-sh/skiff/internal/request"
)

// API Priority and Fairness: the thin HTTP side of internal/apiserver/flowcontrol. A request is
// admitted after authentication and impersonation and before authorization, as kube-apiserver
// orders its filters; the ticket's seats are held until the handler ends, even past a 504 (a watch
// gives them back once it is set up and has written the initial events it found waiting, see
// releaseSeats).

// Response headers naming the schema and level a request was classified into, as Kubernetes sends.
const (
	headerFlowSchemaUID    = "X-Kubernetes-PF-FlowSchema-UID"
	headerPriorityLevelUID = "X-Kubernetes-PF-PriorityLevel-UID"
)

// admitFlow waits for the request's seats. false: the request was refused with a 429 and nothing
// more is to be done.
func (s *Server) admitFlow(w http.ResponseWriter, r *http.Request, info *RequestInfo, user *request.UserInfo) (*flowcontrol.Ticket, bool) {
	fc := s.cfg.FlowControl
	// A request may wait in a queue for a quarter of its time, as kube-apiserver allows; the rest
	// is for serving it.
	timeout := s.cfg.RequestTimeout
	if !longRunning(info) {
		if d, err := s.requestTimeout(r); err == nil {
			timeout = d
		}
	}
	ticket, err := fc.Admit(r.Context(), flowcontrol.Digest{User: user, Info: info}, s.flowSeats(r, info), timeout/4)
	if err != nil {
		rej, ok := flowcontrol.IsRejection(err)
		if !ok {
			s.writeError(w, r, apierrors.NewInternalError(err))
			return nil, false
		}
		setFlowHeaders(w, rej.FlowSchemaUID, rej.PriorityUID)
		retry := max(int(rej.RetryAfter.Seconds()), 1)
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		s.writeError(w, r, apierrors.NewTooManyRequests("Too many requests, please try again later.", retry))
		return nil, false
	}
	setFlowHeaders(w, ticket.FlowSchemaUID, ticket.PriorityUID)
	return ticket, true
}

func setFlowHeaders(w http.ResponseWriter, schemaUID, levelUID string) {
	if schemaUID != "" {
		w.Header().Set(headerFlowSchemaUID, schemaUID)
	}
	if levelUID != "" {
		w.Header().Set(headerPriorityLevelUID, levelUID)
	}
}

// flowSeats estimates the seats a request occupies: one, except a LIST and a watch that starts
// with the current objects (resourceVersion unset or 0, or sendInitialEvents), which take one per
// 100 objects of the resource (flowcontrol.ListSeats, at most 10).
func (s *Server) flowSeats(r *http.Request, info *RequestInfo) int {
	if !info.IsResourceRequest || info.Subresource != "" || info.Name != "" {
		return 1
	}
	q := r.URL.Query()
	switch info.Verb {
	case "list":
	case "watch":
		rv := q.Get("resourceVersion")
		if rv != "" && rv != "0" && q.Get("sendInitialEvents") != "true" {
			return 1
		}
	default:
		return 1
	}
	gr := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
	h := s.handlerForGroupResource(gr)
	if h == nil || h.st == nil {
		return 1
	}
	n := s.cfg.FlowControl.ObjectCount(gr.String(), func() (int64, error) {
		// An estimate is not worth waiting for: bounded well below etcd's own request timeout.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), objectCountTimeout)
		defer cancel()
		return h.st.Count(ctx, "")
	})
	limit, _ := strconv.ParseInt(q.Get("limit"), 10, 64)
	filtered := q.Get("labelSelector") != "" || q.Get("fieldSelector") != ""
	return flowcontrol.ListSeats(n, limit, filtered)
}

// objectCountTimeout bounds the count behind a LIST's seat estimate.
const objectCountTimeout = time.Second

type seatsKey struct{}

// withSeats lets the request's handler give its seats back itself (releaseSeats).
func withSeats(ctx context.Context, t *flowcontrol.Ticket) context.Context {
	return context.WithValue(ctx, seatsKey{}, t)
}

// releaseSeats gives the request's flow-control seats back to its priority level: when a watch's
// initialisation is over (it keeps streaming without them), and when a handler run under the
// request timeout ends (after a 504, later than the response).
func releaseSeats(ctx context.Context) {
	if t, ok := ctx.Value(seatsKey{}).(*flowcontrol.Ticket); ok {
		t.Finish()
	}
}
