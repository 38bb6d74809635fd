package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// BenchmarkStartFresh is a control plane (etcd and controlplane roles, no kubelet) started on a
// new data dir, to Start's return: certificates made, a new etcd member, the API server writing
// its bootstrap objects and default policy.
//
//	go test ./internal/cluster -run '^$' -bench StartFresh -benchtime 5x -cpuprofile /tmp/start.pprof
func BenchmarkStartFresh(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for range b.N {
		b.StopTimer()
		cfg := controlPlaneConfig(b, "startbench")
		b.StartTimer()
		timeStart(ctx, b, cfg)
	}
}

// timeStart starts a node on cfg and stops it, the stop outside the benchmark's time.
func timeStart(ctx context.Context, b *testing.B, cfg Config) {
	n, err := Start(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	n.Stop()
	b.StartTimer()
}

// BenchmarkStartRestart is a control plane (etcd and controlplane roles, no kubelet) started again
// on the data dir it left, to Start's return: certificates, the embedded etcd member and the API
// server, with its bootstrap objects and the Gateway API's definitions (established) stored, so
// that the restart serves them before it listens. It is the restart half of startbench's chain
// in process, so a CPU profile sees it alone:
//
//	go test ./internal/cluster -run '^$' -bench StartRestart -benchtime 5x -cpuprofile /tmp/start.pprof
func BenchmarkStartRestart(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cfg := controlPlaneConfig(b, "startbench")
	n, err := Start(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	ensureGatewayAPIDefinitions(ctx, n.api, quiet)
	if err := waitDefinitionsEstablished(ctx, n); err != nil {
		n.Stop()
		b.Fatal(err)
	}
	n.Stop()
	b.ResetTimer()
	for range b.N {
		timeStart(ctx, b, cfg)
	}
}

// waitDefinitionsEstablished waits until every CustomResourceDefinition is Established, through
// the node's API server in process.
func waitDefinitionsEstablished(ctx context.Context, n *Node) error {
	network, err := componentRESTConfig(&n.cfg, "system:admin", []string{"system:masters"}, time.Now())
	if err != nil {
		return err
	}
	rc, err := inProcessRESTConfig(network, n.api)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	var last error
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err
			continue
		}
		last = establishedAll(list.Items)
		if last == nil {
			return nil
		}
	}
	return fmt.Errorf("definitions not established within 2 minutes: %w", last)
}

func establishedAll(items []unstructured.Unstructured) error {
	if len(items) == 0 {
		return fmt.Errorf("no definitions")
	}
	for _, crd := range items {
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		established := false
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				established = true
			}
		}
		if !established {
			return fmt.Errorf("%s is not established", crd.GetName())
		}
	}
	return nil
}
