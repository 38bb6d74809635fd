package apiserver

import (
	"context"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/registry/builtin"
)

// TestServedGroups drives the groups added for issue 11 through client-go: defaults on create,
// Kubernetes' validation errors, immutable fields, table columns and the flow-control bootstrap.
func TestServedGroups(t *testing.T) {
	c := startTestCluster(t)
	ctx := context.Background()

	t.Run("storage class defaults and immutability", func(t *testing.T) {
		scs := c.client.StorageV1().StorageClasses()
		sc, err := scs.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "ebs.csi.aws.com"}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete || *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate {
			t.Fatalf("defaults = %v %v", *sc.ReclaimPolicy, *sc.VolumeBindingMode)
		}
		sc.Parameters = map[string]string{"type": "io2"}
		_, err = scs.Update(ctx, sc, metav1.UpdateOptions{})
		wantStatus(t, err, 422, "parameters: Forbidden: updates to parameters are forbidden.")
		_, err = scs.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "none"}}, metav1.CreateOptions{})
		wantStatus(t, err, 422, "provisioner: Required value")

		table := &metav1.Table{}
		if err := c.client.StorageV1().RESTClient().Get().Resource("storageclasses").
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(table); err != nil {
			t.Fatal(err)
		}
		var columns []string
		for _, col := range table.ColumnDefinitions {
			columns = append(columns, col.Name)
		}
		if got := strings.Join(columns, ","); got != "Name,Provisioner,ReclaimPolicy,VolumeBindingMode,AllowVolumeExpansion,Age" || len(table.Rows) != 1 {
			t.Fatalf("columns %s, rows %+v", got, table.Rows)
		}
	})

	t.Run("volume attachment status", func(t *testing.T) {
		vas := c.client.StorageV1().VolumeAttachments()
		va, err := vas.Create(ctx, &storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: "csi-1"},
			Spec: storagev1.VolumeAttachmentSpec{Attacher: "ebs.csi.aws.com", NodeName: "worker-1",
				Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-1")}},
			Status: storagev1.VolumeAttachmentStatus{Attached: true},
		}, metav1.CreateOptions{})
		if err != nil || va.Status.Attached {
			t.Fatalf("create: %v %+v", err, va.Status)
		}
		va.Status.Attached = true
		if va, err = vas.UpdateStatus(ctx, va, metav1.UpdateOptions{}); err != nil || !va.Status.Attached {
			t.Fatalf("status: %v %+v", err, va)
		}
	})

	t.Run("runtime class handler", func(t *testing.T) {
		rcs := c.client.NodeV1().RuntimeClasses()
		_, err := rcs.Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "run.sc"}, metav1.CreateOptions{})
		wantStatus(t, err, 422, "handler: Invalid value")
		rc, err := rcs.Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rc.Handler = "kata"
		_, err = rcs.Update(ctx, rc, metav1.UpdateOptions{})
		wantStatus(t, err, 422, "handler: Invalid value: \"kata\": field is immutable")
	})

	t.Run("ingress and network policy", func(t *testing.T) {
		ns := c.namespace(t, "net")
		ing := &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "web.example.com", IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}},
				}}}},
			}}}},
		}
		_, err := c.client.NetworkingV1().Ingresses(ns).Create(ctx, ing, metav1.CreateOptions{})
		wantStatus(t, err, 422, "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified")
		ing.Spec.Rules[0].HTTP.Paths[0].PathType = ptr.To(networkingv1.PathTypePrefix)
		if _, err := c.client.NetworkingV1().Ingresses(ns).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		np, err := c.client.NetworkingV1().NetworkPolicies(ns).Create(ctx, &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "deny", Namespace: ns},
			Spec:       networkingv1.NetworkPolicySpec{Egress: []networkingv1.NetworkPolicyEgressRule{{}}},
		}, metav1.CreateOptions{})
		if err != nil || len(np.Spec.PolicyTypes) != 2 {
			t.Fatalf("network policy: %v %+v", err, np)
		}
	})

	t.Run("pod template", func(t *testing.T) {
		ns := c.namespace(t, "templates")
		pt, err := c.client.CoreV1().PodTemplates(ns).Create(ctx, &corev1.PodTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Template:   corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}},
		}, metav1.CreateOptions{})
		if err != nil || pt.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways || pt.Generation != 1 {
			t.Fatalf("pod template: %v %+v", err, pt)
		}
		_, err = c.client.CoreV1().PodTemplates(ns).Create(ctx, &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: ns}}, metav1.CreateOptions{})
		wantStatus(t, err, 422, "template.spec.containers: Required value")
	})

	t.Run("componentstatuses are read-only", func(t *testing.T) {
		_, err := c.client.CoreV1().ComponentStatuses().Create(ctx, &corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
		if !apierrors.IsMethodNotSupported(err) {
			t.Fatalf("create componentstatus: %v", err)
		}
	})

	t.Run("horizontal pod autoscalers in two versions", func(t *testing.T) {
		ns := c.namespace(t, "hpa")
		v1 := c.client.AutoscalingV1().HorizontalPodAutoscalers(ns)
		v2 := c.client.AutoscalingV2().HorizontalPodAutoscalers(ns)
		created, err := v1.Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
				MaxReplicas:    5, TargetCPUUtilizationPercentage: ptr.To[int32](60),
			},
		}, metav1.CreateOptions{})
		if err != nil || *created.Spec.MinReplicas != 1 {
			t.Fatalf("create v1: %v %+v", err, created)
		}
		asV2, err := v2.Get(ctx, "web", metav1.GetOptions{})
		if err != nil || len(asV2.Spec.Metrics) != 1 || *asV2.Spec.Metrics[0].Resource.Target.AverageUtilization != 60 {
			t.Fatalf("read as v2: %v %+v", err, asV2)
		}
		// A v2-only metric survives an update through v1.
		asV2.Spec.Metrics = append(asV2.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: "rps"},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("10"))},
		}})
		updated, err := v2.Update(ctx, asV2, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The field manager converts between v1 and v2 to track the write: before the scheme knew
		// that conversion it logged "unknown conversion" and kept the v1 create's entry.
		tracked := false
		for _, entry := range updated.ManagedFields {
			tracked = tracked || entry.APIVersion == "autoscaling/v2" && entry.FieldsV1 != nil && strings.Contains(entry.FieldsV1.GetRawString(), `"f:metrics"`)
		}
		if !tracked {
			t.Errorf("managed fields after a v2 update of a v1-created autoscaler: %+v", updated.ManagedFields)
		}
		asV1, err := v1.Get(ctx, "web", metav1.GetOptions{})
		if err != nil || *asV1.Spec.TargetCPUUtilizationPercentage != 60 {
			t.Fatalf("read as v1: %v %+v", err, asV1)
		}
		asV1.Spec.MaxReplicas = 8
		if _, err := v1.Update(ctx, asV1, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		final, err := v2.Get(ctx, "web", metav1.GetOptions{})
		if err != nil || final.Spec.MaxReplicas != 8 || len(final.Spec.Metrics) != 2 {
			t.Fatalf("after the v1 update: %v %+v", err, final)
		}
		_, err = v2.Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns},
			Spec:       autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}},
		}, metav1.CreateOptions{})
		wantStatus(t, err, 422, "spec.maxReplicas: Invalid value: 0: must be greater than 0")
	})

	t.Run("flow-control bootstrap", func(t *testing.T) {
		levels, schemas := builtin.FlowControlConfiguration()
		for _, pl := range levels {
			if err := c.api.EnsureObject(ctx, schema.GroupResource{Group: "flowcontrol.apiserver.k8s.io", Resource: "prioritylevelconfigurations"}, pl); err != nil {
				t.Fatal(err)
			}
		}
		for _, fs := range schemas {
			if err := c.api.EnsureObject(ctx, schema.GroupResource{Group: "flowcontrol.apiserver.k8s.io", Resource: "flowschemas"}, fs); err != nil {
				t.Fatal(err)
			}
		}
		list, err := c.client.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 13 {
			t.Fatalf("flowschemas: %v %d", err, len(list.Items))
		}
		catchAll, err := c.client.FlowcontrolV1().FlowSchemas().Get(ctx, "catch-all", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		catchAll.Spec.MatchingPrecedence = 9999
		_, err = c.client.FlowcontrolV1().FlowSchemas().Update(ctx, catchAll, metav1.UpdateOptions{})
		wantStatus(t, err, 422, "spec of 'catch-all' must equal the fixed value")
	})
}
