package builtin

import (
	"fmt"
	authenticationreg "github.com/skiff-sh/skiff/internal/registry/authentication"
	authorizationreg "github.com/skiff-sh/skiff/internal/registry/authorization"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
	apiregv1 "github.com/skiff-sh/skiff/internal/apis/apiregistrationv1"
	"github.com/skiff-sh/skiff/internal/apiserver/discovery"
	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/admissionregistration"
	"github.com/skiff-sh/skiff/internal/registry/apiextensions"
	"github.com/skiff-sh/skiff/internal/registry/apiregistration"
	"github.com/skiff-sh/skiff/internal/registry/apps"
	"github.com/skiff-sh/skiff/internal/registry/autoscaling"
	"github.com/skiff-sh/skiff/internal/registry/batch"
	"github.com/skiff-sh/skiff/internal/registry/certificates"
	"github.com/skiff-sh/skiff/internal/registry/coordination"
	"github.com/skiff-sh/skiff/internal/registry/core"
	discoveryreg "github.com/skiff-sh/skiff/internal/registry/discovery"
	"github.com/skiff-sh/skiff/internal/registry/events"
	"github.com/skiff-sh/skiff/internal/registry/flowcontrol"
	metricsreg "github.com/skiff-sh/skiff/internal/registry/metrics"
	"github.com/skiff-sh/skiff/internal/registry/networking"
	nodereg "github.com/skiff-sh/skiff/internal/registry/node"
	"github.com/skiff-sh/skiff/internal/registry/policy"
	"github.com/skiff-sh/skiff/internal/registry/printers"
	"github.com/skiff-sh/skiff/internal/registry/rbac"
	"github.com/skiff-sh/skiff/internal/registry/scheduling"
	"github.com/skiff-sh/skiff/internal/registry/schedulingexplain"
	storagereg "github.com/skiff-sh/skiff/internal/registry/storage"
	"github.com/skiff-sh/skiff/internal/storage"
)

// NewScheme registers every served type, the meta.k8s.io types (Table, PartialObjectMetadata) and
// every group's defaults.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register API types: %w", err)
	}
	metav1.AddMetaToScheme(s)
	if err := crdv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register apiextensions types: %w", err)
	}
	if err := apiregv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register apiregistration types: %w", err)
	}
	if err := metricsreg.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register metrics.k8s.io types: %w", err)
	}
	if err := schedulingexplain.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register scheduling.skiff.sh types: %w", err)
	}
	for name, register := range map[string]func(*runtime.Scheme) error{
		"core":                  core.RegisterDefaults,
		"apps":                  apps.RegisterDefaults,
		"batch":                 batch.RegisterDefaults,
		"certificates":          certificates.RegisterDefaults,
		"coordination":          coordination.RegisterDefaults,
		"discovery":             discoveryreg.RegisterDefaults,
		"events":                events.RegisterDefaults,
		"policy":                policy.RegisterDefaults,
		"rbac":                  rbac.RegisterDefaults,
		"scheduling":            scheduling.RegisterDefaults,
		"storage":               storagereg.RegisterDefaults,
		"node":                  nodereg.RegisterDefaults,
		"networking":            networking.RegisterDefaults,
		"flowcontrol":           flowcontrol.RegisterDefaults,
		"autoscaling":           autoscaling.RegisterDefaults,
		"admissionregistration": admissionregistration.RegisterDefaults,
		"apiextensions":         apiextensions.RegisterDefaults,
		"apiregistration":       apiregistration.RegisterDefaults,
	} {
		if err := register(s); err != nil {
			return nil, fmt.Errorf("register %s defaults: %w", name, err)
		}
	}
	return s, nil
}

// Resources lists every built-in resource with its table printer.
func Resources() []*registry.Resource {
	var all []*registry.Resource
	all = append(all, core.Resources()...)
	all = append(all, apps.Resources()...)
	all = append(all, batch.Resources()...)
	all = append(all, certificates.Resources()...)
	all = append(all, coordination.Resources()...)
	all = append(all, discoveryreg.Resources()...)
	all = append(all, events.Resources()...)
	all = append(all, policy.Resources()...)
	all = append(all, rbac.Resources()...)
	all = append(all, authorizationreg.Resources()...)
	all = append(all, authenticationreg.Resources()...)
	all = append(all, scheduling.Resources()...)
	all = append(all, storagereg.Resources()...)
	all = append(all, nodereg.Resources()...)
	all = append(all, networking.Resources()...)
	all = append(all, flowcontrol.Resources()...)
	all = append(all, autoscaling.Resources()...)
	all = append(all, admissionregistration.Resources()...)
	all = append(all, apiextensions.Resources()...)
	all = append(all, apiregistration.Resources()...)
	// metrics.k8s.io: computed from the kubelets by internal/metricsserver, nothing to install.
	all = append(all, metricsreg.Resources()...)
	// scheduling.skiff.sh: PodSchedulingExplanation, computed by the scheduler's plugins.
	all = append(all, schedulingexplain.Resources()...)
	for _, r := range all {
		if r.Printer == nil {
			r.Printer = printers.ForResource(r.GroupResource())
		}
		if r.Printer == nil {
			r.Printer = printers.Default()
		}
	}
	return all
}

// SystemPriorityClasses are created by the API server at start.
func SystemPriorityClasses() []*schedulingv1.PriorityClass { return scheduling.SystemPriorityClasses() }

// FlowControlConfiguration is the mandatory and suggested priority levels and flow schemas the API
// server creates at start, levels first so that every schema's level exists when it appears.
func FlowControlConfiguration() (levels []*flowcontrolv1.PriorityLevelConfiguration, schemas []*flowcontrolv1.FlowSchema) {
	levels = append(flowcontrol.MandatoryPriorityLevelConfigurations(), flowcontrol.SuggestedPriorityLevelConfigurations()...)
	schemas = append(flowcontrol.MandatoryFlowSchemas(), flowcontrol.SuggestedFlowSchemas()...)
	return levels, schemas
}

// ExtraSubresources are the subresources served beyond status and scale, for discovery.
func ExtraSubresources() map[schema.GroupResource][]discovery.Subresource {
	// The proxies take every method; discovery names them as Kubernetes does.
	proxyVerbs := []string{"create", "delete", "get", "patch", "update"}
	return map[schema.GroupResource][]discovery.Subresource{
		{Resource: "pods"}: {
			{Name: "binding", Kind: schema.GroupVersionKind{Kind: "Binding"}, Verbs: []string{"create"}},
			{Name: "eviction", Kind: schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}, Verbs: []string{"create"}},
			{Name: "log", Kind: schema.GroupVersionKind{Kind: "Pod"}, Verbs: []string{"get"}},
			{Name: "exec", Kind: schema.GroupVersionKind{Kind: "PodExecOptions"}, Verbs: []string{"create", "get"}},
			{Name: "attach", Kind: schema.GroupVersionKind{Kind: "PodAttachOptions"}, Verbs: []string{"create", "get"}},
			{Name: "portforward", Kind: schema.GroupVersionKind{Kind: "PodPortForwardOptions"}, Verbs: []string{"create", "get"}},
			{Name: "proxy", Kind: schema.GroupVersionKind{Kind: "PodProxyOptions"}, Verbs: proxyVerbs},
		},
		{Resource: "services"}: {
			{Name: "proxy", Kind: schema.GroupVersionKind{Kind: "ServiceProxyOptions"}, Verbs: proxyVerbs},
		},
		{Resource: "nodes"}: {
			{Name: "proxy", Kind: schema.GroupVersionKind{Kind: "NodeProxyOptions"}, Verbs: proxyVerbs},
		},
		{Resource: "serviceaccounts"}: {
			{Name: "token", Kind: schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}, Verbs: []string{"create"}},
		},
	}
}

// StorageCodec is the codec a resource's objects are kept in etcd with. events.k8s.io/v1 events
// share core/v1 events' storage and autoscaling/v1 horizontal pod autoscalers autoscaling/v2's, so
// they are converted on the way in and out.
func StorageCodec(scheme *runtime.Scheme, res *registry.Resource, encoding string) (runtime.Codec, error) {
	if res.Objects != nil && res.Objects.StorageCodec != nil {
		return res.Objects.StorageCodec, nil
	}
	if res.GroupVersion == autoscalingv1.SchemeGroupVersion && res.Kind == "HorizontalPodAutoscaler" {
		inner, err := storage.NewCodec(scheme, autoscalingv2.SchemeGroupVersion, encoding)
		if err != nil {
			return nil, err
		}
		return hpaV1Codec{inner: inner}, nil
	}
	if res.GroupVersion == eventsv1.SchemeGroupVersion && res.Kind == "Event" {
		inner, err := storage.NewCodec(scheme, corev1.SchemeGroupVersion, encoding)
		if err != nil {
			return nil, err
		}
		return eventsCodec{inner: inner}, nil
	}
	if res.GroupVersion.Group == crdv1.GroupName || res.GroupVersion.Group == apiregv1.GroupName {
		// The definitions and APIServices are hand-declared types: always JSON, as kube-apiserver
		// stores them.
		encoding = storage.EncodingJSON
	}
	return storage.NewCodec(scheme, res.GroupVersion, encoding)
}
