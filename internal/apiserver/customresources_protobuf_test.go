package apiserver

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
)

const protobufType = "application/vnd.kubernetes.protobuf"

// TestCustomResourceDefinitionsInProtobuf: a client speaking protobuf (as the conformance
// framework's apiextensions clientset does) creates, reads and lists definitions in protobuf; a
// custom resource asked for in protobuf-then-JSON comes back in JSON, as upstream serves them.
func TestCustomResourceDefinitionsInProtobuf(t *testing.T) {
	c := startTestCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.api.RunCustomResources(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	scheme := runtime.NewScheme()
	if err := crdv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	pb := protobuf.NewSerializer(scheme, scheme)
	var crd crdv1.CustomResourceDefinition
	if err := yaml.Unmarshal([]byte(widgetCRD), &crd); err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	if err := pb.Encode(&crd, &body); err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(c.admin)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	do := func(method, path, accept string, in []byte) (int, string, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, c.admin.Host+path, bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", accept)
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

	const base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	code, ctype, out := do(http.MethodPost, base, protobufType, body.Bytes())
	if code != http.StatusCreated || ctype != protobufType {
		t.Fatalf("create in protobuf: %d %s %q", code, ctype, out)
	}
	obj, _, err := pb.Decode(out, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	created := obj.(*crdv1.CustomResourceDefinition)
	if created.UID == "" || created.Spec.Names.Kind != "Widget" || created.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["replicas"].Default == nil {
		t.Fatalf("created %+v", created.Spec)
	}

	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		code, _, out := do(http.MethodGet, base+"/widgets.example.com", protobufType, nil)
		if code != http.StatusOK {
			return false, nil
		}
		obj, _, err := pb.Decode(out, nil, nil)
		if err != nil {
			return false, err
		}
		for _, cond := range obj.(*crdv1.CustomResourceDefinition).Status.Conditions {
			if cond.Type == crdv1.Established && cond.Status == crdv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("definition never established in protobuf: %v", err)
	}

	code, _, out = do(http.MethodGet, base, protobufType, nil)
	if code != http.StatusOK {
		t.Fatalf("list: %d %q", code, out)
	}
	obj, _, err = pb.Decode(out, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if list := obj.(*crdv1.CustomResourceDefinitionList); len(list.Items) != 1 || list.ResourceVersion == "" {
		t.Fatalf("list %+v", list)
	}

	code, ctype, out = do(http.MethodGet, "/apis/example.com/v1/widgets", protobufType+", application/json", nil)
	if code != http.StatusOK || !strings.HasPrefix(ctype, "application/json") {
		t.Fatalf("custom resources asked for in protobuf: %d %s %q", code, ctype, out)
	}
}
