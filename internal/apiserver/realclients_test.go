package apiserver

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestRealClientQuirks covers what real clients other than kubectl send: the Python client's
// capitalised booleans, WatchList requests, negative limits, and methods kube-apiserver has no
// route for.
func TestRealClientQuirks(t *testing.T) {
	c := startTestCluster(t)
	ctx := context.Background()
	ns := c.namespace(t, "quirks")
	for _, name := range []string{"a", "b"} {
		if _, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, name, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	client, err := rest.HTTPClientFor(c.admin)
	if err != nil {
		t.Fatal(err)
	}
	base := c.server.URL + "/api/v1/namespaces/" + ns + "/configmaps"
	do := func(t *testing.T, method, url, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var sb strings.Builder
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			sb.WriteString(sc.Text())
			sb.WriteByte('\n')
		}
		return resp.StatusCode, sb.String()
	}

	t.Run("capitalised booleans", func(t *testing.T) {
		code, body := do(t, http.MethodGet, base+"?watch=True&timeoutSeconds=1", "")
		if code != http.StatusOK || strings.Count(body, `"type":"ADDED"`) != 2 {
			t.Fatalf("watch=True = %d %s", code, body)
		}
		code, body = do(t, http.MethodGet, base+"?watch=False", "")
		if code != http.StatusOK || !strings.Contains(body, `"kind":"ConfigMapList"`) {
			t.Fatalf("watch=False = %d %s", code, body)
		}
	})
	t.Run("negative limit lists everything", func(t *testing.T) {
		code, body := do(t, http.MethodGet, base+"?limit=-1", "")
		if code != http.StatusOK || strings.Count(body, `"kind":"ConfigMapList"`) != 1 || !strings.Contains(body, `"name":"a"`) || !strings.Contains(body, `"name":"b"`) {
			t.Fatalf("limit=-1 = %d %s", code, body)
		}
	})
	t.Run("watch list", func(t *testing.T) {
		code, body := do(t, http.MethodGet, base+"?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1", "")
		if code != http.StatusOK || strings.Count(body, `"type":"ADDED"`) != 2 || !strings.Contains(body, `"k8s.io/initial-events-end":"true"`) {
			t.Fatalf("WatchList = %d %s", code, body)
		}
		code, body = do(t, http.MethodGet, base+"?sendInitialEvents=true", "")
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, "sendInitialEvents is forbidden for list") {
			t.Fatalf("list with sendInitialEvents = %d %s", code, body)
		}
		code, body = do(t, http.MethodGet, base+"?watch=1&resourceVersionMatch=NotOlderThan", "")
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided") {
			t.Fatalf("watch with resourceVersionMatch alone = %d %s", code, body)
		}
	})
	t.Run("methods without a route are 405", func(t *testing.T) {
		for _, tt := range []struct{ method, url, body string }{
			{http.MethodDelete, c.server.URL + "/api/v1/namespaces", ""},
			{http.MethodPost, base + "/a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`},
			{http.MethodPut, base, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`},
			{http.MethodPatch, base, `{}`},
		} {
			code, body := do(t, tt.method, tt.url, tt.body)
			if code != http.StatusMethodNotAllowed || !strings.Contains(body, `"reason":"MethodNotAllowed"`) {
				t.Errorf("%s %s = %d %s", tt.method, tt.url, code, body)
			}
		}
		list, err := c.client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) < 5 {
			t.Fatalf("namespaces after DELETE of the collection: %v, %v", list, err)
		}
		for _, ns := range list.Items {
			if ns.DeletionTimestamp != nil {
				t.Errorf("namespace %s is being deleted", ns.Name)
			}
		}
	})
	t.Run("pod status with singular addresses", func(t *testing.T) {
		pod, err := c.client.CoreV1().Pods(ns).Create(ctx, makePod("fake").ns(ns).obj(), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Status.Phase = corev1.PodRunning
		pod.Status.PodIP = "10.42.0.7"
		pod.Status.HostIP = "127.0.0.1"
		pod, err = c.client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("status with podIP and hostIP only: %v", err)
		}
		if len(pod.Status.PodIPs) != 1 || pod.Status.PodIPs[0].IP != "10.42.0.7" || len(pod.Status.HostIPs) != 1 || pod.Status.HostIPs[0].IP != "127.0.0.1" {
			t.Fatalf("status = %+v", pod.Status)
		}
	})
}
