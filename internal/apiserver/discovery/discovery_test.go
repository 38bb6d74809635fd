package discovery

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/skiff-sh/skiff/internal/registry"
)

func newClient(t *testing.T, url string, legacy bool) *discovery.DiscoveryClient {
	t.Helper()
	client, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: url})
	if err != nil {
		t.Fatalf("discovery client: %v", err)
	}
	client.UseLegacyDiscovery = legacy
	return client
}

// TestServerGroupsAndResources reads discovery with client-go in both forms and expects the same
// answer: the groups, preferred versions, resources and subresources kubectl api-resources shows.
func TestServerGroupsAndResources(t *testing.T) {
	for _, tc := range []struct {
		name           string
		legacy         bool
		wantFetchedGVs bool // legacy discovery fetches each group-version's resource list
	}{
		{name: "aggregated", legacy: false, wantFetchedGVs: false},
		{name: "legacy", legacy: true, wantFetchedGVs: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := newTestServer(t, New(testResources(), testExtraSubresources()))
			groups, lists, err := newClient(t, server.URL, tc.legacy).ServerGroupsAndResources()
			if err != nil {
				t.Fatalf("ServerGroupsAndResources: %v", err)
			}

			preferred := map[string]string{}
			versions := map[string][]string{}
			for _, g := range groups {
				preferred[g.Name] = g.PreferredVersion.Version
				for _, v := range g.Versions {
					versions[g.Name] = append(versions[g.Name], v.Version)
				}
			}
			wantPreferred := map[string]string{"": "v1", "apps": "v1", "events.k8s.io": "v1", "example.skiff.dev": "v1"}
			for g, v := range wantPreferred {
				if preferred[g] != v {
					t.Errorf("group %q preferred %q, want %q", g, preferred[g], v)
				}
			}
			if got := strings.Join(versions["example.skiff.dev"], ","); got != "v1,v1beta1" {
				t.Errorf("example.skiff.dev versions = %s, want v1,v1beta1", got)
			}

			byGV := map[string]map[string]metav1.APIResource{}
			for _, list := range lists {
				byGV[list.GroupVersion] = map[string]metav1.APIResource{}
				for _, r := range list.APIResources {
					byGV[list.GroupVersion][r.Name] = r
				}
			}
			core := byGV["v1"]
			pods := core["pods"]
			if !pods.Namespaced || pods.Kind != "Pod" || pods.SingularName != "pod" ||
				strings.Join(pods.ShortNames, ",") != "po" || strings.Join(pods.Categories, ",") != "all" ||
				strings.Join(pods.Verbs, ",") != "create,delete,deletecollection,get,list,patch,update,watch" {
				t.Errorf("pods = %+v", pods)
			}
			if ns := core["namespaces"]; ns.Namespaced || strings.Join(ns.Verbs, ",") != "create,delete,get,list,patch,update,watch" {
				t.Errorf("namespaces = %+v", ns)
			}

			subresources := []struct {
				gv, name, kind, group, version, verbs string
			}{
				{"v1", "pods/status", "Pod", "", "v1", "get,patch,update"},
				{"v1", "pods/binding", "Binding", "", "v1", "create"},
				{"v1", "pods/eviction", "Eviction", "policy", "v1", "create"},
				{"v1", "pods/log", "Pod", "", "v1", "get"},
				{"v1", "pods/exec", "PodExecOptions", "", "v1", "create,get"},
				{"v1", "namespaces/finalize", "Namespace", "", "v1", "update"},
				{"v1", "nodes/proxy", "NodeProxyOptions", "", "v1", "create,delete,get,patch,update"},
				{"apps/v1", "deployments/scale", "Scale", "autoscaling", "v1", "get,patch,update"},
				{"apps/v1", "deployments/status", "Deployment", "apps", "v1", "get,patch,update"},
			}
			for _, want := range subresources {
				got, ok := byGV[want.gv][want.name]
				if !ok {
					t.Errorf("%s %s missing", want.gv, want.name)
					continue
				}
				// The legacy list leaves group and version empty when they are the list's own;
				// client-go fills them in from aggregated discovery.
				if got.Version == "" {
					listGV, _ := schema.ParseGroupVersion(want.gv)
					got.Group, got.Version = listGV.Group, listGV.Version
				}
				if got.Kind != want.kind || got.Group != want.group || got.Version != want.version || strings.Join(got.Verbs, ",") != want.verbs {
					t.Errorf("%s %s = kind %q group %q version %q verbs %v; want %q %q %q %s",
						want.gv, want.name, got.Kind, got.Group, got.Version, got.Verbs, want.kind, want.group, want.version, want.verbs)
				}
			}
			if _, ok := byGV["events.k8s.io/v1"]["events"]; !ok {
				t.Errorf("events.k8s.io/v1 events missing")
			}

			fetchedGV := false
			for _, req := range server.seen() {
				if req.path == "/api/v1" || req.path == "/apis/apps/v1" {
					fetchedGV = true
				}
			}
			if fetchedGV != tc.wantFetchedGVs {
				t.Errorf("fetched per-group-version lists = %v, want %v (requests %v)", fetchedGV, tc.wantFetchedGVs, server.seen())
			}
		})
	}
}

// TestServerPreferredResources is what kubectl api-resources calls.
func TestServerPreferredResources(t *testing.T) {
	server := newTestServer(t, New(testResources(), testExtraSubresources()))
	lists, err := newClient(t, server.URL, false).ServerPreferredResources()
	if err != nil {
		t.Fatalf("ServerPreferredResources: %v", err)
	}
	var names []string
	for _, list := range lists {
		for _, r := range list.APIResources {
			names = append(names, list.GroupVersion+" "+r.Name)
		}
	}
	sort.Strings(names)
	want := []string{"apps/v1 deployments", "events.k8s.io/v1 events", "example.skiff.dev/v1 widgets", "v1 namespaces", "v1 nodes", "v1 pods"}
	if strings.Join(names, ";") != strings.Join(want, ";") {
		t.Errorf("preferred resources = %v, want %v", names, want)
	}
}

func doGet(t *testing.T, url, accept, ifNoneMatch string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if ifNoneMatch != "" {
		req.Header.Set("If-None-Match", ifNoneMatch)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return resp, body
}

const (
	acceptV2      = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	acceptV2beta1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
)

func TestNegotiation(t *testing.T) {
	server := newTestServer(t, New(testResources(), testExtraSubresources()))
	tests := []struct {
		name, path, accept string
		wantContentType    string
	}{
		{"kubectl 1.32 order picks v2", "/apis", acceptV2 + "," + acceptV2beta1 + ",application/json", acceptV2},
		{"v2beta1 only", "/apis", acceptV2beta1 + ",application/json", acceptV2beta1},
		{"no-peer profile", "/api", acceptV2 + ";profile=nopeer," + acceptV2 + ",application/json", acceptV2},
		{"q values rank clauses", "/apis", acceptV2 + ";q=0.5,application/json;q=0.9", "application/json"},
		{"plain json is legacy", "/apis", "application/json", "application/json"},
		{"no accept is legacy", "/api", "", "application/json"},
		{"protobuf aggregated is skipped", "/apis", "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", "application/json"},
		{"unknown discovery version is skipped", "/apis", "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,application/json", "application/json"},
		{"group-version lists are always legacy", "/apis/apps/v1", acceptV2, "application/json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := doGet(t, server.URL+tc.path, tc.accept, "")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if got := resp.Header.Get("Content-Type"); got != tc.wantContentType {
				t.Errorf("Content-Type = %q, want %q", got, tc.wantContentType)
			}
			var typeMeta metav1.TypeMeta
			if err := json.Unmarshal(body, &typeMeta); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if strings.Contains(tc.wantContentType, "apidiscovery") {
				wantVersion := "apidiscovery.k8s.io/v2"
				if strings.Contains(tc.wantContentType, "v2beta1") {
					wantVersion += "beta1"
				}
				if typeMeta.APIVersion != wantVersion || typeMeta.Kind != "APIGroupDiscoveryList" {
					t.Errorf("body type = %+v, want %s APIGroupDiscoveryList", typeMeta, wantVersion)
				}
			}
		})
	}
}

func TestAggregatedDocument(t *testing.T) {
	server := newTestServer(t, New(testResources(), testExtraSubresources()))

	resp, body := doGet(t, server.URL+"/api", acceptV2, "")
	var core apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(body, &core); err != nil {
		t.Fatalf("decode /api: %v", err)
	}
	if len(core.Items) != 1 || core.Items[0].Name != "" {
		t.Fatalf("/api groups = %+v, want the core group only", core.Items)
	}
	v1 := core.Items[0].Versions[0]
	if v1.Version != "v1" || v1.Freshness != apidiscoveryv2.DiscoveryFreshnessCurrent {
		t.Errorf("core version = %s %s", v1.Version, v1.Freshness)
	}
	var pods *apidiscoveryv2.APIResourceDiscovery
	for i := range v1.Resources {
		if v1.Resources[i].Resource == "pods" {
			pods = &v1.Resources[i]
		}
	}
	if pods == nil {
		t.Fatalf("no pods in %+v", v1.Resources)
	}
	if pods.Scope != apidiscoveryv2.ScopeNamespace || pods.SingularResource != "pod" ||
		*pods.ResponseKind != (metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}) {
		t.Errorf("pods = %+v", pods)
	}
	subs := map[string]apidiscoveryv2.APISubresourceDiscovery{}
	for _, s := range pods.Subresources {
		subs[s.Subresource] = s
	}
	if got := subs["eviction"].ResponseKind; got == nil || *got != (metav1.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}) {
		t.Errorf("eviction kind = %v", got)
	}

	// The ETag answers If-None-Match with 304, per Accept form.
	etag := resp.Header.Get("Etag")
	if etag == "" {
		t.Fatalf("no ETag on aggregated discovery")
	}
	notModified, _ := doGet(t, server.URL+"/api", acceptV2, etag)
	if notModified.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match = %d, want 304", notModified.StatusCode)
	}
	beta, betaBody := doGet(t, server.URL+"/api", acceptV2beta1, etag)
	if beta.StatusCode != http.StatusOK {
		t.Errorf("v2beta1 with the v2 ETag = %d, want 200", beta.StatusCode)
	}
	var betaList apidiscoveryv2beta1.APIGroupDiscoveryList
	if err := json.Unmarshal(betaBody, &betaList); err != nil || len(betaList.Items) != 1 {
		t.Errorf("v2beta1 body: %v %+v", err, betaList)
	}

	_, apisBody := doGet(t, server.URL+"/apis", acceptV2, "")
	var groups apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(apisBody, &groups); err != nil {
		t.Fatalf("decode /apis: %v", err)
	}
	var names []string
	for _, g := range groups.Items {
		names = append(names, g.Name)
	}
	if got := strings.Join(names, ","); got != "apps,events.k8s.io,example.skiff.dev" {
		t.Errorf("/apis groups = %s (in order of the resource list)", got)
	}
}

func TestLegacyDocuments(t *testing.T) {
	server := newTestServer(t, New(testResources(), testExtraSubresources()))

	_, body := doGet(t, server.URL+"/api", "application/json", "")
	var versions metav1.APIVersions
	if err := json.Unmarshal(body, &versions); err != nil {
		t.Fatalf("decode /api: %v", err)
	}
	if versions.Kind != "APIVersions" || strings.Join(versions.Versions, ",") != "v1" || len(versions.ServerAddressByClientCIDRs) != 1 {
		t.Errorf("/api = %+v", versions)
	}

	_, body = doGet(t, server.URL+"/apis/example.skiff.dev", "", "")
	var group metav1.APIGroup
	if err := json.Unmarshal(body, &group); err != nil {
		t.Fatalf("decode group: %v", err)
	}
	if group.Kind != "APIGroup" || group.PreferredVersion.GroupVersion != "example.skiff.dev/v1" || len(group.Versions) != 2 {
		t.Errorf("/apis/example.skiff.dev = %+v", group)
	}

	// Subresources name their group and version only when they differ from the list's.
	_, body = doGet(t, server.URL+"/apis/apps/v1", "", "")
	var apps metav1.APIResourceList
	if err := json.Unmarshal(body, &apps); err != nil {
		t.Fatalf("decode apps/v1: %v", err)
	}
	wantEntries := map[string]string{"deployments": "//Deployment", "deployments/status": "//Deployment", "deployments/scale": "autoscaling/v1/Scale"}
	for _, r := range apps.APIResources {
		if want, ok := wantEntries[r.Name]; ok && r.Group+"/"+r.Version+"/"+r.Kind != want {
			t.Errorf("%s = %s/%s/%s, want %s", r.Name, r.Group, r.Version, r.Kind, want)
		}
		delete(wantEntries, r.Name)
	}
	if len(wantEntries) != 0 || apps.Kind != "APIResourceList" || apps.GroupVersion != "apps/v1" {
		t.Errorf("apps/v1 list = %+v (missing %v)", apps, wantEntries)
	}

	for _, path := range []string{"/apis/nope", "/apis/apps/v2", "/api/v2"} {
		resp, body := doGet(t, server.URL+path, "", "")
		var status metav1.Status
		if err := json.Unmarshal(body, &status); err != nil {
			t.Fatalf("decode %s: %v", path, err)
		}
		if resp.StatusCode != http.StatusNotFound || status.Reason != metav1.StatusReasonNotFound || status.Kind != "Status" {
			t.Errorf("%s = %d %+v, want a 404 NotFound Status", path, resp.StatusCode, status)
		}
	}

	req, _ := http.NewRequest(http.MethodPost, server.URL+"/apis", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /apis = %d, want 405", resp.StatusCode)
	}
}

func TestUpdate(t *testing.T) {
	d := New(testResources(), nil)
	server := newTestServer(t, d)
	client := newClient(t, server.URL, false)
	if _, err := client.ServerResourcesForGroupVersion("batch/v1"); err == nil {
		t.Fatalf("batch/v1 served before Update")
	}
	d.Update(append(testResources(), makeResource("batch", "v1", "Job", "jobs").namespaced().status().obj()), nil)
	list, err := client.ServerResourcesForGroupVersion("batch/v1")
	if err != nil {
		t.Fatalf("batch/v1 after Update: %v", err)
	}
	if len(list.APIResources) != 2 || list.APIResources[0].Name != "jobs" || list.APIResources[1].Name != "jobs/status" {
		t.Errorf("batch/v1 = %+v", list.APIResources)
	}
	// Without the extra subresources map nothing beyond status/scale is listed.
	pods, err := client.ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatalf("v1: %v", err)
	}
	for _, r := range pods.APIResources {
		if r.Name == "pods/log" {
			t.Errorf("pods/log listed without being configured")
		}
	}
}

func TestHandles(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{"/api", true}, {"/api/", true}, {"/api/v1", true}, {"/apis", true}, {"/apis/apps", true},
		{"/apis/apps/v1", true}, {"/apis/apps/v1/", true},
		{"/api/v1/pods", false}, {"/api/v1/namespaces/default/pods", false}, {"/apis/apps/v1/deployments", false},
		{"/", false}, {"/healthz", false}, {"/openapi/v2", false},
	}
	for _, tc := range tests {
		if got := Handles(tc.path); got != tc.want {
			t.Errorf("Handles(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}

// TestConcurrentServeAndUpdate is for -race.
func TestConcurrentServeAndUpdate(t *testing.T) {
	d := New(testResources(), testExtraSubresources())
	server := newTestServer(t, d)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 20; i++ {
			d.Update(testResources(), testExtraSubresources())
		}
	}()
	for i := 0; i < 20; i++ {
		if resp, body := doGet(t, server.URL+"/apis", acceptV2, ""); resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /apis = %d %s", resp.StatusCode, body)
		}
	}
	<-done
}

// TestLegacyListStorageVersionHash checks that the APIResourceList shows a resource's
// storageVersionHash, and not on its subresources, which kube-apiserver lists without one.
func TestLegacyListStorageVersionHash(t *testing.T) {
	widgets := makeResource("example.skiff.dev", "v1", "Widget", "widgets").namespaced().status().obj()
	widgets.StorageVersionHash = registry.StorageVersionHash("example.skiff.dev", "v1", "Widget")
	server := newTestServer(t, New([]*registry.Resource{widgets}, nil))
	_, body := doGet(t, server.URL+"/apis/example.skiff.dev/v1", "", "")
	var list metav1.APIResourceList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("decode: %v", err)
	}
	got := map[string]string{}
	for _, r := range list.APIResources {
		got[r.Name] = r.StorageVersionHash
	}
	want := map[string]string{"widgets": widgets.StorageVersionHash, "widgets/status": ""}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("storageVersionHash by resource = %v, want %v", got, want)
	}
}
