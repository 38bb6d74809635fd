package webhook_test

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/apiserver/admission/policy"
)

func deployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
}

// TestValidatingAdmissionPolicy: a policy with a param (a ConfigMap holding the maximum) denies a
// Deployment with too many replicas with the policy's messageExpression, Kubernetes' wording, reason
// and code; a Warn binding turns failures into warnings.
func TestValidatingAdmissionPolicy(t *testing.T) {
	plugin, err := policy.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	e := startEnv(t, &extraPlugins{plugins: []apiserver.AdmissionPlugin{plugin}, start: plugin.Start})
	ctx := context.Background()
	_, err = e.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "limits"}, Data: map[string]string{"maxReplicas": "3"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "replica-limit"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind: &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				},
			}}},
			Variables: []admissionregistrationv1.Variable{{Name: "max", Expression: "int(params.data.maxReplicas)"}},
			Validations: []admissionregistrationv1.Validation{{
				Expression:        "object.spec.replicas <= variables.max",
				Message:           "too many replicas",
				MessageExpression: "'replicas must be no greater than ' + string(variables.max) + ', got ' + string(object.spec.replicas)",
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "replica-limit-default"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "replica-limit",
			ParamRef:          &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "default", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `deployments.apps "big" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-default' denied request: replicas must be no greater than 3, got 5`
	eventually(t, func() error {
		_, err := e.client.AppsV1().Deployments("default").Create(ctx, deployment("big", 5), metav1.CreateOptions{})
		if err == nil || err.Error() != want {
			if err == nil {
				_ = e.client.AppsV1().Deployments("default").Delete(ctx, "big", metav1.DeleteOptions{})
			}
			return errFmt("got %v, want %q", err, want)
		}
		if !apierrors.IsInvalid(err) {
			return errFmt("reason %v, want Invalid", apierrors.ReasonForError(err))
		}
		return nil
	})
	if _, err := e.client.AppsV1().Deployments("default").Create(ctx, deployment("small", 2), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a deployment within the limit: %v", err)
	}

	// Warn: the same policy bound for warnings in another namespace.
	if _, err := e.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lenient", Labels: map[string]string{"mode": "warn"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The Deny binding names its param's namespace; here the param is looked up in the request's.
	if _, err := e.client.CoreV1().ConfigMaps("lenient").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "limits"}, Data: map[string]string{"maxReplicas": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = e.client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Update(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "replica-limit-default"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "replica-limit",
			ParamRef:   &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "default", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "mode", Operator: metav1.LabelSelectorOpDoesNotExist},
			}}},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "replica-limit-warn"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "replica-limit",
			ParamRef:          &admissionregistrationv1.ParamRef{Name: "limits", ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"mode": "warn"}}},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(e.config)
	var warnings []string
	cfg.WarningHandler = warningCollector(func(msg string) { warnings = append(warnings, msg) })
	client := kubernetes.NewForConfigOrDie(cfg)
	wantWarning := "Validation failed for ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-warn': replicas must be no greater than 1, got 2"
	n := 0
	eventually(t, func() error {
		warnings = nil
		n++
		d := deployment("warned-"+strings.Repeat("x", n), 2)
		if _, err := client.AppsV1().Deployments("lenient").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			return err
		}
		if len(warnings) != 1 || warnings[0] != wantWarning {
			return errFmt("warnings %q, want %q", warnings, wantWarning)
		}
		return nil
	})
}
