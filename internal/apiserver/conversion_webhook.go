package apiserver

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
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
	"github.com/skiff-sh/skiff/internal/registry/customresource"
	"github.com/skiff-sh/skiff/internal/storage"
)

// conversionTimeout bounds one call of a conversion webhook, as kube-apiserver's 30 seconds.
const conversionTimeout = 30 * time.Second

// conversionReview is apiextensions.k8s.io/v1 (and v1beta1) ConversionReview, declared here with
// its JSON shape: skiff does not depend on k8s.io/apiextensions-apiserver.
type conversionReview struct {
	APIVersion string              `json:"apiVersion"`
	Kind       string              `json:"kind"`
	Request    *conversionRequest  `json:"request,omitempty"`
	Response   *conversionResponse `json:"response,omitempty"`
}

type conversionRequest struct {
	UID               string            `json:"uid"`
	DesiredAPIVersion string            `json:"desiredAPIVersion"`
	Objects           []json.RawMessage `json:"objects"`
}

type conversionResponse struct {
	UID              string                           `json:"uid"`
	ConvertedObjects []map[string]interface{}         `json:"convertedObjects"`
	Result           struct{ Status, Message string } `json:"result"`
}

// conversionWebhook returns the converter of a definition with the Webhook strategy, nil otherwise.
func (s *Server) conversionWebhook(crd *crdv1.CustomResourceDefinition) (customresource.Converter, error) {
	conv := crd.Spec.Conversion
	if conv == nil || conv.Strategy != crdv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		return nil, nil
	}
	cc := conv.Webhook.ClientConfig
	reviewVersion := "v1beta1"
	if slices.Contains(conv.Webhook.ConversionReviewVersions, "v1") {
		reviewVersion = "v1"
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(cc.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cc.CABundle) {
			return nil, fmt.Errorf("conversion webhook of %s: caBundle holds no certificate", crd.Name)
		}
		tlsConfig.RootCAs = pool
	}
	name := crd.Name
	return func(objs []*unstructured.Unstructured, to schema.GroupVersion) ([]*unstructured.Unstructured, error) {
		ctx, cancel := context.WithTimeout(context.Background(), conversionTimeout)
		defer cancel()
		url, serverName, err := s.webhookURL(ctx, cc)
		if err != nil {
			return nil, fmt.Errorf("conversion webhook for %s failed: %w", name, err)
		}
		transportTLS := tlsConfig.Clone()
		transportTLS.ServerName = serverName
		// One client per call: the endpoint (and so the certificate's name) may change between calls.
		client := &http.Client{Timeout: conversionTimeout, Transport: &http.Transport{TLSClientConfig: transportTLS}}
		defer client.CloseIdleConnections()
		review := conversionReview{APIVersion: "apiextensions.k8s.io/" + reviewVersion, Kind: "ConversionReview",
			Request: &conversionRequest{UID: uuid.NewString(), DesiredAPIVersion: to.String()}}
		for _, o := range objs {
			raw, err := o.MarshalJSON()
			if err != nil {
				return nil, err
			}
			review.Request.Objects = append(review.Request.Objects, raw)
		}
		body, err := json.Marshal(review)
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("conversion webhook for %s failed: %w", name, err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("conversion webhook for %s failed: %w", name, err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes*4))
		if err != nil {
			return nil, fmt.Errorf("conversion webhook for %s failed: %w", name, err)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("conversion webhook for %s failed: HTTP %d: %s", name, resp.StatusCode, bytes.TrimSpace(data))
		}
		var out conversionReview
		if err := json.Unmarshal(data, &out); err != nil || out.Response == nil {
			return nil, fmt.Errorf("conversion webhook for %s returned an invalid ConversionReview: %v", name, err)
		}
		if out.Response.UID != review.Request.UID {
			return nil, fmt.Errorf("conversion webhook for %s returned a response for another request: uid %q", name, out.Response.UID)
		}
		if out.Response.Result.Status != "Success" {
			return nil, fmt.Errorf("conversion webhook for %s failed: %s", name, out.Response.Result.Message)
		}
		if len(out.Response.ConvertedObjects) != len(objs) {
			return nil, fmt.Errorf("conversion webhook for %s returned %d objects, expected %d", name, len(out.Response.ConvertedObjects), len(objs))
		}
		converted := make([]*unstructured.Unstructured, len(objs))
		for i, o := range out.Response.ConvertedObjects {
			u := &unstructured.Unstructured{Object: o}
			if u.GetAPIVersion() != to.String() {
				return nil, fmt.Errorf("conversion webhook for %s returned apiVersion %q, expected %q", name, u.GetAPIVersion(), to)
			}
			// Metadata is the API server's: only labels and annotations may change, as upstream.
			meta := objs[i].DeepCopy()
			meta.SetLabels(u.GetLabels())
			meta.SetAnnotations(u.GetAnnotations())
			u.Object["metadata"] = meta.Object["metadata"]
			converted[i] = u
		}
		return converted, nil
	}, nil
}

// webhookURL is where a webhook is reached: its URL, or for a service one of the service's ready
// endpoints (so no service proxy is needed on the API server's host), with the name its certificate
// is checked against.
func (s *Server) webhookURL(ctx context.Context, cc *crdv1.WebhookClientConfig) (string, string, error) {
	if cc.URL != nil {
		return *cc.URL, "", nil
	}
	svc := cc.Service
	path := ""
	if svc.Path != nil {
		path = *svc.Path
	}
	port := int32(443)
	if svc.Port != nil {
		port = *svc.Port
	}
	serverName := svc.Name + "." + svc.Namespace + ".svc"
	h := s.handlerForGroupResource(schema.GroupResource{Group: discoveryv1.GroupName, Resource: "endpointslices"})
	services := s.handlerForGroupResource(schema.GroupResource{Resource: "services"})
	if h == nil || services == nil {
		return "", "", fmt.Errorf("service %s/%s: endpoint slices are not served", svc.Namespace, svc.Name)
	}
	svcObj, err := services.st.Get(ctx, svc.Namespace, svc.Name, storage.GetOptions{})
	if err != nil {
		return "", "", fmt.Errorf("service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	portName := ""
	if service, ok := svcObj.(*corev1.Service); ok {
		for _, p := range service.Spec.Ports {
			if p.Port == port {
				portName = p.Name
			}
		}
	}
	list, err := h.st.List(ctx, svc.Namespace, storage.ListOptions{Recursive: true, Predicate: storage.Predicate{
		Label: labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc.Name})}})
	if err != nil {
		return "", "", err
	}
	for _, slice := range list.(*discoveryv1.EndpointSliceList).Items {
		target := int32(0)
		for _, p := range slice.Ports {
			if p.Port != nil && (p.Name == nil && portName == "" || p.Name != nil && *p.Name == portName) {
				target = *p.Port
			}
		}
		if target == 0 {
			continue
		}
		for _, ep := range slice.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready || len(ep.Addresses) == 0 {
				continue
			}
			return "https://" + net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(target))) + path, serverName, nil
		}
	}
	return "", "", fmt.Errorf("service %s/%s has no ready endpoints", svc.Namespace, svc.Name)
}
