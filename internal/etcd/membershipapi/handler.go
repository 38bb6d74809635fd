package membershipapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/etcdapi"
)

// Timeouts of the membership operations.
const (
	// RequestTimeout bounds list and remove.
	RequestTimeout = 30 * time.Second
	// PromoteTimeout bounds a promotion, which waits for the learner to catch up, and an add,
	// which may wait for another learner's promotion (etcd takes one learner at a time).
	PromoteTimeout = 2 * time.Minute
)

// Handler serves the membership endpoints over one etcd client.
type Handler struct {
	Client *clientv3.Client
	Clock  clock.Clock
	Log    *slog.Logger
	// LocalAlarm reports a condition of this API server's own member that etcd raises no alarm
	// for (skiff's disk fence); nil when there is none to report.
	LocalAlarm func() error
}

type action int

const (
	actionList action = iota + 1
	actionAdd
	actionPromote
	actionRemove
)

// route decides what a request asks for (pure): the action and the member ID it names.
func route(method, path string) (action, uint64, error) {
	rest, ok := strings.CutPrefix(path, etcdapi.MembersPath)
	if !ok {
		return 0, 0, errNotFound
	}
	rest = strings.TrimSuffix(rest, "/")
	if rest == "" {
		switch method {
		case http.MethodGet:
			return actionList, 0, nil
		case http.MethodPost:
			return actionAdd, 0, nil
		}
		return 0, 0, errMethod
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	if !strings.HasPrefix(rest, "/") || len(parts) > 2 {
		return 0, 0, errNotFound
	}
	id, err := etcd.ParseID(parts[0])
	if err != nil {
		return 0, 0, err
	}
	switch {
	case len(parts) == 1 && method == http.MethodDelete:
		return actionRemove, id, nil
	case len(parts) == 2 && "/"+parts[1] == etcdapi.PromoteSuffix && method == http.MethodPost:
		return actionPromote, id, nil
	case len(parts) == 2 && "/"+parts[1] != etcdapi.PromoteSuffix:
		return 0, 0, errNotFound
	}
	return 0, 0, errMethod
}

var (
	errNotFound = errors.New("no such etcd membership endpoint")
	errMethod   = errors.New("method not allowed on this etcd membership endpoint")
)

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	act, id, err := route(r.Method, r.URL.Path)
	switch {
	case errors.Is(err, errNotFound):
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, err.Error())
		return
	case errors.Is(err, errMethod):
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, err.Error())
		return
	case err != nil:
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	timeout := RequestTimeout
	if act == actionPromote || act == actionAdd {
		timeout = PromoteTimeout
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	switch act {
	case actionList:
		list, err := etcd.ListMembers(ctx, h.Client)
		if err == nil && h.LocalAlarm != nil {
			if alarm := h.LocalAlarm(); alarm != nil {
				list.Alarms = append(list.Alarms, alarm.Error())
			}
		}
		h.answer(w, list, err)
	case actionAdd:
		var req etcdapi.AddMemberRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf("decode add-member request: %v", err))
			return
		}
		if req.Name == "" || len(req.PeerURLs) == 0 {
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "add-member request needs a name and peerURLs")
			return
		}
		resp, err := etcd.AddLearner(ctx, h.Client, req.Name, req.PeerURLs, h.Clock, etcd.DefaultPromoteInterval, h.Log)
		h.answer(w, resp, err)
	case actionPromote:
		err := etcd.PromoteLearner(ctx, h.Client, id, h.Clock, etcd.DefaultPromoteInterval, h.Log)
		if err != nil {
			h.answer(w, nil, err)
			return
		}
		h.answer(w, h.member(ctx, id), nil)
	case actionRemove:
		err := etcd.RemoveMember(ctx, h.Client, id, h.Log)
		h.answer(w, map[string]string{"removed": etcd.FormatID(id)}, err)
	}
}

// member is the status of one member after a change, or just its ID when the list fails.
func (h *Handler) member(ctx context.Context, id uint64) etcdapi.Member {
	if list, err := etcd.ListMembers(ctx, h.Client); err == nil {
		for _, m := range list.Members {
			if m.ID == etcd.FormatID(id) {
				return m
			}
		}
	}
	return etcdapi.Member{ID: etcd.FormatID(id)}
}

func (h *Handler) answer(w http.ResponseWriter, body any, err error) {
	if err != nil {
		h.Log.Warn("etcd membership request failed", "err", err)
		code, reason := http.StatusInternalServerError, metav1.StatusReasonInternalError
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			code, reason = http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable
		case strings.Contains(err.Error(), "member not found"):
			code, reason = http.StatusNotFound, metav1.StatusReasonNotFound
		case strings.Contains(err.Error(), "exists"), strings.Contains(err.Error(), "unhealthy cluster"):
			code, reason = http.StatusConflict, metav1.StatusReasonConflict
		}
		writeStatus(w, code, reason, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(body)
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg,
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(st)
}
