package apiserver

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/rest"

	apiregv1 "github.com/skiff-sh/skiff/internal/apis/apiregistrationv1"
)

// TestAPIServicesInProtobuf: a client speaking protobuf (the conformance framework's aggregator
// clientset does) creates, reads and lists APIServices in protobuf. Before APIServices had a
// protobuf encoding the create answered "does not implement the protobuf marshalling interface".
func TestAPIServicesInProtobuf(t *testing.T) {
	c := startTestCluster(t)
	ctx := t.Context()
	scheme := runtime.NewScheme()
	if err := apiregv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	pb := protobuf.NewSerializer(scheme, scheme)
	port := int32(7443)
	in := &apiregv1.APIService{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService"},
		ObjectMeta: metav1.ObjectMeta{Name: "v1alpha1.wardle.example.com"},
		Spec: apiregv1.APIServiceSpec{
			Service: &apiregv1.ServiceReference{Namespace: "default", Name: "sample-api", Port: &port},
			Group:   "wardle.example.com", Version: "v1alpha1", InsecureSkipTLSVerify: true,
			GroupPriorityMinimum: 2000, VersionPriority: 200,
		},
	}
	var body bytes.Buffer
	if err := pb.Encode(in, &body); err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(c.admin)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	do := func(method, path string, in []byte) (int, string, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, c.admin.Host+path, bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", protobufType)
		if in != nil {
			req.Header.Set("Content-Type", protobufType)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), out
	}

	const base = "/apis/apiregistration.k8s.io/v1/apiservices"
	code, ctype, out := do(http.MethodPost, base, body.Bytes())
	if code != http.StatusCreated || ctype != protobufType {
		t.Fatalf("create in protobuf: %d %s %q", code, ctype, out)
	}
	obj, _, err := pb.Decode(out, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	created := obj.(*apiregv1.APIService)
	if created.UID == "" || created.Spec.Service == nil || created.Spec.Service.Name != "sample-api" || *created.Spec.Service.Port != 7443 || !created.Spec.InsecureSkipTLSVerify {
		t.Fatalf("created %+v", created.Spec)
	}

	code, _, out = do(http.MethodGet, base+"/v1alpha1.wardle.example.com", nil)
	if code != http.StatusOK {
		t.Fatalf("get: %d %q", code, out)
	}
	if obj, _, err = pb.Decode(out, nil, nil); err != nil || obj.(*apiregv1.APIService).Spec.Group != "wardle.example.com" {
		t.Fatalf("get decoded %v, %v", obj, err)
	}

	code, _, out = do(http.MethodGet, base, nil)
	if code != http.StatusOK {
		t.Fatalf("list: %d %q", code, out)
	}
	obj, _, err = pb.Decode(out, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	list := obj.(*apiregv1.APIServiceList)
	found := false
	for _, s := range list.Items {
		found = found || s.Name == "v1alpha1.wardle.example.com"
	}
	if !found || list.ResourceVersion == "" {
		t.Fatalf("list of %d APIServices (rv %q) lacks the created one", len(list.Items), list.ResourceVersion)
	}

	code, _, out = do(http.MethodDelete, base+"/v1alpha1.wardle.example.com", nil)
	if code != http.StatusOK {
		t.Fatalf("delete in protobuf: %d %q", code, out)
	}
}
