package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/request"
)

// maxResponseBytes bounds what a webhook may answer, as Kubernetes does.
const maxResponseBytes = 3 * 1024 * 1024

// callError is Kubernetes' ErrCallingWebhook: the webhook could not be reached or answered
// nonsense; failurePolicy decides what it means for the request.
type callError struct {
	webhook string
	reason  error
}

func (e *callError) Error() string {
	return fmt.Sprintf("failed calling webhook %q: %v", e.webhook, e.reason)
}

func (e *callError) Unwrap() error { return e.reason }

// endpoint is where and how to reach a webhook.
type endpoint struct {
	url        string
	serverName string
}

// resolve turns a client config into a URL. A service is resolved to a ready endpoint address
// through its EndpointSlices rather than its cluster IP: the API server does not rely on the
// node's service proxy, which a control-plane-only node may not run.
func resolve(ctx context.Context, cc *admissionregistrationv1.WebhookClientConfig, lookup admission.Lookup) (endpoint, error) {
	if cc.URL != nil {
		u, err := url.Parse(*cc.URL)
		if err != nil {
			return endpoint{}, err
		}
		return endpoint{url: *cc.URL, serverName: u.Hostname()}, nil
	}
	ref := cc.Service
	if ref == nil {
		return endpoint{}, fmt.Errorf("neither url nor service is set")
	}
	port := deref(ref.Port, 443)
	path := deref(ref.Path, "")
	obj, err := lookup.Get(ctx, "", "services", ref.Namespace, ref.Name)
	if err != nil {
		return endpoint{}, fmt.Errorf("service %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	svc := obj.(*corev1.Service)
	var svcPort *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			svcPort = &svc.Spec.Ports[i]
		}
	}
	if svcPort == nil {
		return endpoint{}, fmt.Errorf("service %s/%s has no port %d", ref.Namespace, ref.Name, port)
	}
	serverName := ref.Name + "." + ref.Namespace + ".svc"
	list, err := lookup.List(ctx, discoveryv1.GroupName, "endpointslices", ref.Namespace)
	if err != nil {
		return endpoint{}, fmt.Errorf("endpoints of service %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	slices, _ := list.(*discoveryv1.EndpointSliceList)
	for _, s := range slices.Items {
		if s.Labels[discoveryv1.LabelServiceName] != ref.Name {
			continue
		}
		var target *int32
		for _, p := range s.Ports {
			if deref(p.Name, "") == svcPort.Name && p.Port != nil {
				target = p.Port
			}
		}
		if target == nil {
			continue
		}
		for _, e := range s.Endpoints {
			if (e.Conditions.Ready == nil || *e.Conditions.Ready) && len(e.Addresses) > 0 {
				host := net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*target)))
				return endpoint{url: "https://" + host + path, serverName: serverName}, nil
			}
		}
	}
	return endpoint{}, fmt.Errorf("service %s/%s has no ready endpoints for port %d", ref.Namespace, ref.Name, port)
}

// call sends the review and returns the webhook's response, checked the way Kubernetes checks it.
func call(ctx context.Context, h *hook, review *admissionv1.AdmissionReview, lookup admission.Lookup) (*admissionv1.AdmissionResponse, error) {
	fail := func(err error) (*admissionv1.AdmissionResponse, error) {
		return nil, &callError{webhook: h.name, reason: err}
	}
	ep, err := resolve(ctx, &h.clientConfig, lookup)
	if err != nil {
		return fail(fmt.Errorf("failed to resolve webhook address: %w", err))
	}
	timeout := time.Duration(h.timeoutSeconds) * time.Second
	u, err := url.Parse(ep.url)
	if err != nil {
		return fail(err)
	}
	// Kubernetes tells the webhook its deadline in the query.
	q := u.Query()
	q.Set("timeout", strconv.Itoa(int(h.timeoutSeconds))+"s")
	u.RawQuery = q.Encode()
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: ep.serverName}
	if len(h.clientConfig.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(h.clientConfig.CABundle) {
			return fail(fmt.Errorf("caBundle holds no PEM certificate"))
		}
		tlsCfg.RootCAs = pool
	}
	// One connection per call: webhook configurations come and go, and idle transports per CA
	// bundle would outlive them.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg, DisableKeepAlives: true, Proxy: nil}}
	body, err := json.Marshal(review)
	if err != nil {
		return fail(err)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return fail(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	// The call's time is the webhook's, not the API server's: the latency SLI leaves it out.
	started := time.Now()
	defer func() { request.ExcludeFromSLI(ctx, time.Since(started)) }()
	resp, err := client.Do(req)
	if err != nil {
		return fail(fmt.Errorf("failed to call webhook: %w", err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fail(fmt.Errorf("failed to call webhook: %w", err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fail(fmt.Errorf("failed to call webhook: the server responded with the status code %d but did not return more information", resp.StatusCode))
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &out); err != nil {
		return fail(fmt.Errorf("failed to call webhook: %w", err))
	}
	if gvk := out.GroupVersionKind(); gvk != admissionv1.SchemeGroupVersion.WithKind("AdmissionReview") {
		return fail(fmt.Errorf("expected webhook response of %v, got %v", admissionv1.SchemeGroupVersion.WithKind("AdmissionReview"), gvk))
	}
	if out.Response == nil {
		return fail(fmt.Errorf("webhook response was absent"))
	}
	if out.Response.UID != review.Request.UID {
		return fail(fmt.Errorf("expected response.uid=%q, got %q", review.Request.UID, out.Response.UID))
	}
	return out.Response, nil
}

// denied is Kubernetes' rejection by a webhook: its status, with the message prefixed by who
// denied, a code of at least 400 and status Failure.
func denied(webhook string, result *metav1.Status) *apierrors.StatusError {
	st := metav1.Status{Status: metav1.StatusFailure}
	if result != nil {
		st = *result.DeepCopy()
	}
	if st.Code < http.StatusBadRequest {
		st.Code = http.StatusBadRequest
	}
	if st.Status == "" || st.Status == metav1.StatusSuccess {
		st.Status = metav1.StatusFailure
	}
	prefix := fmt.Sprintf("admission webhook %q denied the request", webhook)
	switch {
	case st.Message != "":
		st.Message = prefix + ": " + st.Message
	case st.Reason != "":
		st.Message = prefix + ": " + string(st.Reason)
	default:
		st.Message = prefix + " without explanation"
	}
	return &apierrors.StatusError{ErrStatus: st}
}
