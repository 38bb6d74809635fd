package webhook

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/registry"
)

// fakeLookup serves a fixed set of objects to the plugins.
type fakeLookup struct {
	objects map[string]runtime.Object // group/resource/namespace/name
	lists   map[string]runtime.Object // group/resource/namespace
}

func (f *fakeLookup) Get(_ context.Context, group, resource, namespace, name string) (runtime.Object, error) {
	if o, ok := f.objects[group+"/"+resource+"/"+namespace+"/"+name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: resource}, name)
}

func (f *fakeLookup) List(_ context.Context, group, resource, namespace string) (runtime.Object, error) {
	if o, ok := f.lists[group+"/"+resource+"/"+namespace]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: resource}, "")
}

var _ apiserver.Lookup = &fakeLookup{}

func TestResolveService(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: "sys"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}
	slice := func(ready bool, addr string) discoveryv1.EndpointSlice {
		return discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: "hook-" + addr, Namespace: "sys", Labels: map[string]string{discoveryv1.LabelServiceName: "hook"}},
			Endpoints:  []discoveryv1.Endpoint{{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}},
			Ports:      []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(8443))}},
		}
	}
	lookup := &fakeLookup{
		objects: map[string]runtime.Object{"/services/sys/hook": svc},
		lists: map[string]runtime.Object{"discovery.k8s.io/endpointslices/sys": &discoveryv1.EndpointSliceList{Items: []discoveryv1.EndpointSlice{
			slice(false, "10.0.0.1"), slice(true, "10.0.0.2"),
		}}},
	}
	cc := &admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "sys", Name: "hook", Path: ptr.To("/check")}}
	ep, err := resolve(context.Background(), cc, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if ep.url != "https://10.0.0.2:8443/check" || ep.serverName != "hook.sys.svc" {
		t.Fatalf("resolved %+v", ep)
	}
	cc.Service.Port = ptr.To(int32(444))
	if _, err := resolve(context.Background(), cc, lookup); err == nil {
		t.Fatal("a port the service lacks resolved")
	}
}

// TestDryRunSideEffects: a webhook that may have side effects is not called on a dry run and
// the request fails, as in Kubernetes (v1 only admits None and NoneOnDryRun, so this guards
// configurations written through older versions).
func TestDryRunSideEffects(t *testing.T) {
	w, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	res := &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Kind: "ConfigMap", Plural: "configmaps", Namespaced: true}
	h := &hook{
		name: "fx.example.com", sideEffects: admissionregistrationv1.SideEffectClassSome, failurePolicy: admissionregistrationv1.Fail,
		clientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/")},
		rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"*"}, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"},
		}}},
	}
	a := &apiserver.AdmissionAttributes{Verb: "create", Resource: res, Name: "c", Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, DryRun: true}
	_, invoked, err := w.dispatch(context.Background(), h, a, &fakeLookup{}, false)
	if invoked || err == nil || err.Error() != `admission webhook "fx.example.com" does not support dry run` || !apierrors.IsBadRequest(err) {
		t.Fatalf("invoked %v, err %v", invoked, err)
	}
}
