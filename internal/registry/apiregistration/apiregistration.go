package apiregistration

import (
	"fmt"
	"sort"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apiregv1 "github.com/skiff-sh/skiff/internal/apis/apiregistrationv1"
	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

// Resources returns the apiregistration.k8s.io/v1 resources.
func Resources() []*registry.Resource {
	apiVersion := apiregv1.SchemeGroupVersion.String()
	return []*registry.Resource{{
		GroupVersion: apiregv1.SchemeGroupVersion, Kind: "APIService", ListKind: "APIServiceList",
		Plural: "apiservices", Singular: "apiservice", Categories: []string{"api-extensions"},
		New:     func() runtime.Object { return &apiregv1.APIService{} },
		NewList: func() runtime.Object { return &apiregv1.APIServiceList{} },
		Strategy: &vu.Strategy[*apiregv1.APIService]{
			APIVersion: apiVersion,
			// The name is checked against spec.version and spec.group below.
			NameFn: func(string, bool) []string { return nil },
			ClearStatus: func(a *apiregv1.APIService) {
				a.Status = apiregv1.APIServiceStatus{}
			},
			KeepStatus: func(a, old *apiregv1.APIService) { a.Status = old.Status },
			SpecEqual: func(a, old *apiregv1.APIService) bool {
				return apiequality.Semantic.DeepEqual(a.Spec, old.Spec)
			},
			ValidateObject: Validate,
		},
		Status: &vu.StatusStrategy[*apiregv1.APIService]{
			APIVersion: apiVersion,
			KeepSpec:   func(a, old *apiregv1.APIService) { a.Spec = old.Spec },
			ValidateStatus: func(a, _ *apiregv1.APIService) field.ErrorList {
				return validateStatus(a)
			},
		},
		Printer: printer(),
	}}
}

// RegisterDefaults registers the APIService defaults on s.
func RegisterDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&apiregv1.APIService{}, func(obj interface{}) { SetDefaults(obj.(*apiregv1.APIService)) })
	s.AddTypeDefaultingFunc(&apiregv1.APIServiceList{}, func(obj interface{}) {
		list := obj.(*apiregv1.APIServiceList)
		for i := range list.Items {
			SetDefaults(&list.Items[i])
		}
	})
	return nil
}

// SetDefaults fills what upstream's defaulting fills: the service port, 443.
func SetDefaults(a *apiregv1.APIService) {
	if a.Spec.Service != nil && a.Spec.Service.Port == nil {
		port := int32(443)
		a.Spec.Service.Port = &port
	}
}

// Validate checks an APIService as kube-aggregator does, with its messages.
func Validate(a *apiregv1.APIService) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if want := a.Spec.Version + "." + a.Spec.Group; a.Name != want {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), a.Name, fmt.Sprintf("must be `spec.version+\".\"+spec.group`: %q", want)))
	}
	if a.Spec.Group == "" && a.Spec.Version != "v1" {
		errs = append(errs, field.Required(spec.Child("group"), "only v1 may have an empty group and it better be legacy kube"))
	}
	if a.Spec.Group != "" {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(a.Spec.Group) {
			errs = append(errs, field.Invalid(spec.Child("group"), a.Spec.Group, msg))
		}
	}
	for _, msg := range utilvalidation.IsDNS1035Label(a.Spec.Version) {
		errs = append(errs, field.Invalid(spec.Child("version"), a.Spec.Version, msg))
	}
	if a.Spec.GroupPriorityMinimum <= 0 || a.Spec.GroupPriorityMinimum > 20000 {
		errs = append(errs, field.Invalid(spec.Child("groupPriorityMinimum"), a.Spec.GroupPriorityMinimum, "must be positive and less than 20000"))
	}
	if a.Spec.VersionPriority <= 0 || a.Spec.VersionPriority > 1000 {
		errs = append(errs, field.Invalid(spec.Child("versionPriority"), a.Spec.VersionPriority, "must be positive and less than 1000"))
	}
	if a.Spec.Service == nil {
		if len(a.Spec.CABundle) != 0 {
			errs = append(errs, field.Invalid(spec.Child("caBundle"), fmt.Sprintf("%d bytes", len(a.Spec.CABundle)), "local APIServices may not have a caBundle"))
		}
		if a.Spec.InsecureSkipTLSVerify {
			errs = append(errs, field.Invalid(spec.Child("insecureSkipTLSVerify"), a.Spec.InsecureSkipTLSVerify, "local APIServices may not have insecureSkipTLSVerify"))
		}
		return errs
	}
	svc := spec.Child("service")
	if a.Spec.Service.Namespace == "" {
		errs = append(errs, field.Required(svc.Child("namespace"), ""))
	}
	if a.Spec.Service.Name == "" {
		errs = append(errs, field.Required(svc.Child("name"), ""))
	}
	if p := a.Spec.Service.Port; p != nil {
		for _, msg := range utilvalidation.IsValidPortNum(int(*p)) {
			errs = append(errs, field.Invalid(svc.Child("port"), *p, msg))
		}
	}
	if a.Spec.InsecureSkipTLSVerify && len(a.Spec.CABundle) > 0 {
		errs = append(errs, field.Invalid(spec.Child("insecureSkipTLSVerify"), a.Spec.InsecureSkipTLSVerify, "may not be true if caBundle is present"))
	}
	return errs
}

func validateStatus(a *apiregv1.APIService) field.ErrorList {
	var errs field.ErrorList
	for i, c := range a.Status.Conditions {
		p := field.NewPath("status", "conditions").Index(i)
		switch c.Status {
		case apiregv1.ConditionTrue, apiregv1.ConditionFalse, apiregv1.ConditionUnknown:
		default:
			errs = append(errs, field.NotSupported(p.Child("status"), c.Status, []string{"True", "False", "Unknown"}))
		}
		if c.Type == "" {
			errs = append(errs, field.Required(p.Child("type"), ""))
		}
	}
	return errs
}

func printer() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Service", Type: "string", Description: "The reference to the service that hosts this API endpoint."},
			{Name: "Available", Type: "string", Description: "Whether this service is available."},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: func(obj runtime.Object, now time.Time) ([]interface{}, error) {
			a, ok := obj.(*apiregv1.APIService)
			if !ok {
				return nil, fmt.Errorf("print apiservices: got a %T", obj)
			}
			service := "Local"
			if a.Spec.Service != nil {
				service = a.Spec.Service.Namespace + "/" + a.Spec.Service.Name
			}
			available := "Unknown"
			if c := a.Status.Condition(apiregv1.Available); c != nil {
				available = string(c.Status)
				if c.Status != apiregv1.ConditionTrue {
					available += " (" + c.Reason + ")"
				}
			}
			age := "<unknown>"
			if !a.CreationTimestamp.IsZero() {
				age = duration.HumanDuration(now.Sub(a.CreationTimestamp.Time))
			}
			return []interface{}{a.Name, service, available, age}, nil
		},
	}
}

// Priority orders a group among groups and a version within its group in discovery.
type Priority struct{ Group, Version int32 }

// builtinPriorities are kube-apiserver's priorities of the group versions skiff serves (its
// apiVersionPriorities table; the values decide kubectl's preferred versions and group order).
// apiregistration.k8s.io is not in that table: its own APIService gets the core group's 18000.
var builtinPriorities = map[schema.GroupVersion]Priority{
	{Group: "", Version: "v1"}:                             {Group: 18000, Version: 1},
	{Group: "apiregistration.k8s.io", Version: "v1"}:       {Group: 18000, Version: 15},
	{Group: "apps", Version: "v1"}:                         {Group: 17800, Version: 15},
	{Group: "events.k8s.io", Version: "v1"}:                {Group: 17750, Version: 15},
	{Group: "authentication.k8s.io", Version: "v1"}:        {Group: 17700, Version: 15},
	{Group: "authorization.k8s.io", Version: "v1"}:         {Group: 17600, Version: 15},
	{Group: "autoscaling", Version: "v1"}:                  {Group: 17500, Version: 15},
	{Group: "autoscaling", Version: "v2"}:                  {Group: 17500, Version: 30},
	{Group: "batch", Version: "v1"}:                        {Group: 17400, Version: 15},
	{Group: "certificates.k8s.io", Version: "v1"}:          {Group: 17300, Version: 15},
	{Group: "networking.k8s.io", Version: "v1"}:            {Group: 17200, Version: 15},
	{Group: "policy", Version: "v1"}:                       {Group: 17100, Version: 15},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}:    {Group: 17000, Version: 15},
	{Group: "storage.k8s.io", Version: "v1"}:               {Group: 16800, Version: 15},
	{Group: "apiextensions.k8s.io", Version: "v1"}:         {Group: 16700, Version: 15},
	{Group: "admissionregistration.k8s.io", Version: "v1"}: {Group: 16700, Version: 15},
	{Group: "scheduling.k8s.io", Version: "v1"}:            {Group: 16600, Version: 15},
	{Group: "coordination.k8s.io", Version: "v1"}:          {Group: 16500, Version: 15},
	{Group: "node.k8s.io", Version: "v1"}:                  {Group: 16300, Version: 15},
	{Group: "discovery.k8s.io", Version: "v1"}:             {Group: 16200, Version: 15},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}: {Group: 16100, Version: 21},
	// Served by skiff itself rather than an installed metrics-server, with the priorities of
	// metrics-server's manifest.
	{Group: "metrics.k8s.io", Version: "v1beta1"}: {Group: 100, Version: 100},
}

// LocalAPIServices are the APIServices of the group versions among served that kube-apiserver
// lists with priorities (a group version it has no priority for gets none, as upstream: a custom
// resource's group must not stay listed after its definition is gone), sorted by name.
func LocalAPIServices(served []schema.GroupVersion) []*apiregv1.APIService {
	seen := map[schema.GroupVersion]bool{}
	var out []*apiregv1.APIService
	for _, gv := range served {
		p, ok := builtinPriorities[gv]
		if !ok || seen[gv] {
			continue
		}
		seen[gv] = true
		out = append(out, &apiregv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group},
			Spec:       apiregv1.APIServiceSpec{Group: gv.Group, Version: gv.Version, GroupPriorityMinimum: p.Group, VersionPriority: p.Version},
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
