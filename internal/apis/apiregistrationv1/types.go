package apiregistrationv1

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of APIServices.
const GroupName = "apiregistration.k8s.io"

// SchemeGroupVersion is apiregistration.k8s.io/v1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

// AddToScheme registers the types of apiregistration.k8s.io/v1 and the group's meta types.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &APIService{}, &APIServiceList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// APIService says which server serves one group version: this API server itself (no service) or
// an extension API server behind a Service, to which requests are proxied.
type APIService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              APIServiceSpec   `json:"spec,omitempty"`
	Status            APIServiceStatus `json:"status,omitempty"`
}

// APIServiceList is a list of APIServices.
type APIServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []APIService `json:"items"`
}

// ServiceReference names the Service an extension API server is reached through.
type ServiceReference struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Port      *int32 `json:"port,omitempty"`
}

// APIServiceSpec is the served group version and where it is served.
type APIServiceSpec struct {
	// Service is nil for a group version this API server serves itself.
	Service               *ServiceReference `json:"service,omitempty"`
	Group                 string            `json:"group,omitempty"`
	Version               string            `json:"version,omitempty"`
	InsecureSkipTLSVerify bool              `json:"insecureSkipTLSVerify,omitempty"`
	CABundle              []byte            `json:"caBundle,omitempty"`
	GroupPriorityMinimum  int32             `json:"groupPriorityMinimum"`
	VersionPriority       int32             `json:"versionPriority"`
}

// ConditionStatus is True, False or Unknown.
type ConditionStatus string

// The condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// APIServiceConditionType names a condition.
type APIServiceConditionType string

// Available is the one condition: the group version answers.
const Available APIServiceConditionType = "Available"

// APIServiceCondition is one condition of an APIService.
type APIServiceCondition struct {
	Type               APIServiceConditionType `json:"type"`
	Status             ConditionStatus         `json:"status"`
	LastTransitionTime metav1.Time             `json:"lastTransitionTime,omitempty"`
	Reason             string                  `json:"reason,omitempty"`
	Message            string                  `json:"message,omitempty"`
}

// APIServiceStatus holds the conditions.
type APIServiceStatus struct {
	Conditions []APIServiceCondition `json:"conditions,omitempty"`
}

// The types are copied through their JSON form, as internal/apis/apiextensionsv1 does: the JSON
// form is exactly what they hold, and APIServices are written rarely.
func jsonCopy[T any](in *T) *T {
	if in == nil {
		return nil
	}
	data, err := json.Marshal(in)
	if err != nil {
		panic("apiregistrationv1: deep copy: " + err.Error())
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		panic("apiregistrationv1: deep copy: " + err.Error())
	}
	return out
}

// DeepCopy copies the APIService.
func (in *APIService) DeepCopy() *APIService { return jsonCopy(in) }

// DeepCopyObject implements runtime.Object.
func (in *APIService) DeepCopyObject() runtime.Object { return in.DeepCopy() }

// DeepCopy copies the list.
func (in *APIServiceList) DeepCopy() *APIServiceList { return jsonCopy(in) }

// DeepCopyObject implements runtime.Object.
func (in *APIServiceList) DeepCopyObject() runtime.Object { return in.DeepCopy() }

// Condition returns the condition of type t, or nil.
func (s *APIServiceStatus) Condition(t APIServiceConditionType) *APIServiceCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// OpenAPIModelName is the name Kubernetes publishes the APIService schema under.
func (APIService) OpenAPIModelName() string {
	return "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService"
}

// OpenAPIModelName is the name Kubernetes publishes the list's schema under.
func (APIServiceList) OpenAPIModelName() string {
	return "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceList"
}
