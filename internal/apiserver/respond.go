package apiserver

import (
	"encoding/json"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// writeError answers with the Kubernetes Status for err. Errors that are not API errors become 500
// InternalError, with the detail logged rather than guessed at.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		s.log.Error("internal error", "path", r.URL.Path, "err", err)
		status = apierrors.NewInternalError(err)
	}
	st := status.Status()
	s.writeStatus(w, r, &st)
}

func (s *Server) writeStatus(w http.ResponseWriter, r *http.Request, st *metav1.Status) {
	st.Kind, st.APIVersion = "Status", "v1"
	if st.Status == "" {
		st.Status = metav1.StatusFailure
	}
	code := int(st.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	if st.Code == http.StatusTooManyRequests || st.Code == http.StatusServiceUnavailable || st.Code == http.StatusGatewayTimeout {
		if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
			w.Header().Set("Retry-After", itoa(int64(st.Details.RetryAfterSeconds)))
		}
	}
	// A Status is always encodable as JSON or protobuf; honour protobuf clients, default to JSON.
	choice, err := negotiateOutput(acceptsHeader(r), s.codecs.SupportedMediaTypes(), false)
	if err != nil || choice.info.MediaType == "application/yaml" {
		s.writeJSON(w, code, st)
		return
	}
	enc := s.codecs.EncoderForVersion(choice.info.Serializer, schema.GroupVersion{Version: "v1"})
	w.Header().Set("Content-Type", choice.info.MediaType)
	w.WriteHeader(code)
	if err := enc.Encode(st, w); err != nil {
		s.log.Debug("write status", "err", err)
	}
}

func (s *Server) writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// writeEncoded writes obj with an already negotiated encoding. gv is the version obj is served in.
func (s *Server) writeEncoded(w http.ResponseWriter, code int, choice mediaChoice, gv schema.GroupVersion, obj runtime.Object) error {
	enc := s.codecs.EncoderForVersion(choice.info.Serializer, gv)
	if _, ok := obj.(*unstructured.UnstructuredList); ok {
		// A custom resource list is in the served version already; the versioning encoder would
		// send it through the server's scheme, which does not know its kind.
		enc = choice.info.Serializer
	}
	w.Header().Set("Content-Type", choice.info.MediaType)
	w.WriteHeader(code)
	return enc.Encode(obj, w)
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
