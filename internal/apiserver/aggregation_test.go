package apiserver

import (
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apiregv1 "github.com/skiff-sh/skiff/internal/apis/apiregistrationv1"
	"github.com/skiff-sh/skiff/internal/request"
)

func remoteAPIService() *apiregv1.APIService {
	port := int32(443)
	return &apiregv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1.wardle.example.com"},
		Spec: apiregv1.APIServiceSpec{
			Group: "wardle.example.com", Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 15,
			Service: &apiregv1.ServiceReference{Namespace: "wardle", Name: "api", Port: &port},
		},
	}
}

func TestDecideAvailability(t *testing.T) {
	local := remoteAPIService()
	local.Spec.Service = nil
	for _, tc := range []struct {
		name    string
		svc     *apiregv1.APIService
		facts   availabilityFacts
		status  apiregv1.ConditionStatus
		reason  string
		message string
	}{
		{"local", local, availabilityFacts{}, apiregv1.ConditionTrue, "Local", "Local APIServices are always available"},
		{"service missing", remoteAPIService(), availabilityFacts{serviceMissing: true}, apiregv1.ConditionFalse, "ServiceNotFound", `service/api in "wardle" is not present`},
		{"service unreadable", remoteAPIService(), availabilityFacts{serviceErr: errors.New("etcd down")}, apiregv1.ConditionUnknown, "ServiceAccessError", `service/api in "wardle" cannot be checked due to: etcd down`},
		{"port missing", remoteAPIService(), availabilityFacts{portMissing: true}, apiregv1.ConditionFalse, "ServicePortError", `service/api in "wardle" is not listening on port 443`},
		{"no slices", remoteAPIService(), availabilityFacts{noSlices: true}, apiregv1.ConditionFalse, "EndpointsNotFound", `cannot find endpoints for service/api in "wardle"`},
		{"no ready endpoint", remoteAPIService(), availabilityFacts{noEndpoint: true, portName: "https"}, apiregv1.ConditionFalse, "MissingEndpoints", `endpoints for service/api in "wardle" have no addresses with port name "https"`},
		{"discovery fails", remoteAPIService(), availabilityFacts{discoveryURL: "https://10.0.0.1:443/apis/wardle.example.com/v1", discoveryErr: errors.New("bad status: 403")},
			apiregv1.ConditionFalse, "FailedDiscoveryCheck", "failing or missing response from https://10.0.0.1:443/apis/wardle.example.com/v1: bad status: 403"},
		{"passed", remoteAPIService(), availabilityFacts{}, apiregv1.ConditionTrue, "Passed", "all checks passed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decideAvailability(tc.svc, tc.facts)
			if got.Type != apiregv1.Available || got.Status != tc.status || got.Reason != tc.reason || got.Message != tc.message {
				t.Fatalf("got %+v, want %s %s %q", got, tc.status, tc.reason, tc.message)
			}
		})
	}
}

// TestWithCondition: the transition time moves only with the status; an identical condition is
// no change at all.
func TestWithCondition(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	cond := func(status apiregv1.ConditionStatus, reason string) apiregv1.APIServiceCondition {
		return apiregv1.APIServiceCondition{Type: apiregv1.Available, Status: status, Reason: reason}
	}
	st, changed := withCondition(apiregv1.APIServiceStatus{}, cond(apiregv1.ConditionFalse, "ServiceNotFound"), t0)
	if !changed || !st.Conditions[0].LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("first condition: %+v %v", st, changed)
	}
	if _, changed := withCondition(st, cond(apiregv1.ConditionFalse, "ServiceNotFound"), t1); changed {
		t.Fatal("an identical condition counted as a change")
	}
	st2, changed := withCondition(st, cond(apiregv1.ConditionFalse, "MissingEndpoints"), t1)
	if !changed || !st2.Conditions[0].LastTransitionTime.Time.Equal(t0) || st2.Conditions[0].Reason != "MissingEndpoints" {
		t.Fatalf("same status, new reason: %+v", st2)
	}
	st3, _ := withCondition(st2, cond(apiregv1.ConditionTrue, "Passed"), t1)
	if !st3.Conditions[0].LastTransitionTime.Time.Equal(t1) {
		t.Fatalf("status change kept the old transition time: %+v", st3)
	}
	if st.Conditions[0].Reason != "ServiceNotFound" {
		t.Fatal("withCondition changed its input")
	}
}

// TestIdentityHeaders: the caller is named in the configured headers, extra keys escaped, and
// whatever the client sent that could pass for an identity is dropped first.
func TestIdentityHeaders(t *testing.T) {
	a := newAggregator(&Server{}, AggregationConfig{})
	got := a.identityHeaders(&request.UserInfo{Name: "alice", Groups: []string{"dev", "system:authenticated"},
		Extra: map[string][]string{"example.org/scope": {"a", "b"}}})
	want := http.Header{
		"X-Remote-User":                      {"alice"},
		"X-Remote-Group":                     {"dev", "system:authenticated"},
		"X-Remote-Extra-Example.org%2fscope": {"a", "b"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	in := http.Header{}
	for k, v := range map[string]string{"Authorization": "Bearer x", "Impersonate-User": "root", "Impersonate-Extra-Scope": "x",
		"X-Remote-User": "mallory", "X-Remote-Group": "system:masters", "X-Remote-Extra-Foo": "bar", "Accept": "application/json"} {
		in.Set(k, v)
	}
	a.stripIdentity(in)
	if len(in) != 1 || in.Get("Accept") != "application/json" {
		t.Fatalf("left %v", in)
	}
}

func TestAggregatedGroupVersion(t *testing.T) {
	for path, want := range map[string]string{
		"/apis/wardle.example.com/v1":                         "wardle.example.com/v1",
		"/apis/wardle.example.com/v1/":                        "wardle.example.com/v1",
		"/apis/wardle.example.com/v1/namespaces/a/flunders/x": "wardle.example.com/v1",
		"/apis/wardle.example.com":                            "",
		"/apis":                                               "",
		"/api/v1/pods":                                        "",
		"/apis//v1":                                           "",
		"/openapi/v3/apis/wardle.example.com/v1":              "",
	} {
		gv, ok := aggregatedGroupVersion(path)
		got := ""
		if ok {
			got = gv.String()
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", path, got, want)
		}
	}
}

func TestIsUpgradeRequest(t *testing.T) {
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	if isUpgradeRequest(r) {
		t.Fatal("plain request")
	}
	r.Header.Set("Connection", "keep-alive, Upgrade")
	r.Header.Set("Upgrade", "SPDY/3.1")
	if !isUpgradeRequest(r) {
		t.Fatal("upgrade request not seen")
	}
}

// TestDiscoveryChanged: only what discovery shows counts.
func TestDiscoveryChanged(t *testing.T) {
	base := &aggRoute{name: "v1.x", available: true, spec: remoteAPIService().Spec, resources: []metav1.APIResource{{Name: "flunders"}}}
	moved := *base
	moved.endpoint = "10.0.0.2:443"
	down := *base
	down.available = false
	more := *base
	more.resources = append(more.resources, metav1.APIResource{Name: "fischers"})
	for name, tc := range map[string]struct {
		old, new *aggRoute
		want     bool
	}{
		"new endpoint":       {base, &moved, false},
		"unavailable":        {base, &down, true},
		"new resource":       {base, &more, true},
		"removed":            {base, nil, true},
		"removed while down": {&down, nil, false},
	} {
		if got := discoveryChanged(tc.old, tc.new); got != tc.want {
			t.Errorf("%s: got %v", name, got)
		}
	}
}
