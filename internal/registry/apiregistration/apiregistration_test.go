package apiregistration

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	apiregv1 "github.com/skiff-sh/skiff/internal/apis/apiregistrationv1"
)

func remote() *apiregv1.APIService {
	a := &apiregv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1beta1.metrics.k8s.io"},
		Spec: apiregv1.APIServiceSpec{Group: "metrics.k8s.io", Version: "v1beta1", GroupPriorityMinimum: 100, VersionPriority: 100,
			Service: &apiregv1.ServiceReference{Namespace: "kube-system", Name: "metrics-server"}, InsecureSkipTLSVerify: true},
	}
	SetDefaults(a)
	return a
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(a *apiregv1.APIService)
		want   string // "" for valid; else a substring of the errors
	}{
		{"valid remote", func(*apiregv1.APIService) {}, ""},
		{"valid local core", func(a *apiregv1.APIService) {
			a.Name, a.Spec.Group, a.Spec.Version, a.Spec.Service, a.Spec.InsecureSkipTLSVerify = "v1.", "", "v1", nil, false
		}, ""},
		{"name must match", func(a *apiregv1.APIService) { a.Name = "metrics" }, "metadata.name: Invalid value: \"metrics\": must be `spec.version+\".\"+spec.group`"},
		{"empty group only for v1", func(a *apiregv1.APIService) { a.Name, a.Spec.Group = "v1beta1.", "" }, "only v1 may have an empty group"},
		{"group priority", func(a *apiregv1.APIService) { a.Spec.GroupPriorityMinimum = 0 }, "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000"},
		{"version priority", func(a *apiregv1.APIService) { a.Spec.VersionPriority = 1001 }, "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000"},
		{"both trust settings", func(a *apiregv1.APIService) { a.Spec.CABundle = []byte("x") }, "may not be true if caBundle is present"},
		{"local with caBundle", func(a *apiregv1.APIService) {
			a.Spec.Service, a.Spec.InsecureSkipTLSVerify, a.Spec.CABundle = nil, false, []byte("x")
		}, "local APIServices may not have a caBundle"},
		{"service name", func(a *apiregv1.APIService) { a.Spec.Service.Name = "" }, "spec.service.name: Required value"},
		{"service port", func(a *apiregv1.APIService) { p := int32(70000); a.Spec.Service.Port = &p }, "spec.service.port: Invalid value: 70000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := remote()
			tc.change(a)
			errs := Validate(a)
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("errors %v lack %q", errs, tc.want)
			}
		})
	}
}

func TestDefaultsAndPrinter(t *testing.T) {
	a := remote()
	if a.Spec.Service.Port == nil || *a.Spec.Service.Port != 443 {
		t.Fatalf("port not defaulted: %v", a.Spec.Service.Port)
	}
	now := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)
	a.CreationTimestamp = metav1.NewTime(now.Add(-2 * time.Hour))
	a.Status.Conditions = []apiregv1.APIServiceCondition{{Type: apiregv1.Available, Status: apiregv1.ConditionFalse, Reason: "MissingEndpoints"}}
	row, err := printer().Row(a, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []interface{}{"v1beta1.metrics.k8s.io", "kube-system/metrics-server", "False (MissingEndpoints)", "120m"}
	for i := range want {
		if row[i] != want[i] {
			t.Fatalf("row %v, want %v", row, want)
		}
	}
}

func TestLocalAPIServices(t *testing.T) {
	got := LocalAPIServices([]schema.GroupVersion{{Version: "v1"}, {Group: "apps", Version: "v1"}, {Group: "apps", Version: "v1"}, {Group: "example.com", Version: "v1"}})
	if len(got) != 2 || got[0].Name != "v1." || got[1].Name != "v1.apps" || got[1].Spec.GroupPriorityMinimum != 17800 || got[1].Spec.VersionPriority != 15 {
		t.Fatalf("got %+v", got)
	}
	for _, a := range got {
		if errs := Validate(a); len(errs) != 0 {
			t.Errorf("%s invalid: %v", a.Name, errs)
		}
	}
}
