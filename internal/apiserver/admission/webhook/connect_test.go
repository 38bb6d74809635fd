package webhook_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/apiserver/admission/policy"
)

// TestConnectWebhook registers a validating webhook for CONNECT on pods/attach, exec and proxy: the API
// server calls it before it opens a stream, with the connect options as the object, and its denial
// is the client's error (upstream's "should be able to deny attaching pod"). Reads (pods/log) and
// CONNECTs it is not registered for (portforward) do not call it.
func TestConnectWebhook(t *testing.T) {
	e := startEnv(t, nil)
	ctx := context.Background()
	var mu sync.Mutex
	var seen []*admissionv1.AdmissionRequest
	url := e.webhookServer(t, func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		mu.Lock()
		seen = append(seen, req)
		mu.Unlock()
		if req.SubResource == "proxy" {
			var opts corev1.PodProxyOptions
			_ = json.Unmarshal(req.Object.Raw, &opts)
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: req.Kind.Kind + " to " + opts.Path + " is not allowed", Code: http.StatusForbidden}}
		}
		if req.SubResource == "attach" {
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: "attaching to pod '" + req.Name + "' is not allowed", Code: http.StatusForbidden}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	if _, err := e.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-attach"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "deny-attach.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url + "/attach"), CABundle: e.ca.CertPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Connect},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/attach", "pods/exec", "pods/proxy"}},
			}},
			SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := e.client.CoreV1().RESTClient()
	connect := func(sub string, params map[string]string) error {
		req := pods.Post().Namespace("default").Resource("pods").Name("to-be-attached").SubResource(sub)
		for k, v := range params {
			req = req.Param(k, v)
		}
		return req.Do(ctx).Error()
	}
	// The configuration reaches the plugin through a watch.
	var err error
	eventually(t, func() error {
		err = connect("attach", map[string]string{"container": "app", "stdin": "true", "stdout": "true"})
		if err == nil || !strings.Contains(err.Error(), "attaching to pod 'to-be-attached' is not allowed") {
			return errFmt("attach: %v", err)
		}
		return nil
	})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `admission webhook "deny-attach.example.com" denied the request`) {
		t.Errorf("attach error = %v", err)
	}
	mu.Lock()
	req := seen[len(seen)-1]
	mu.Unlock()
	var opts corev1.PodAttachOptions
	if err := json.Unmarshal(req.Object.Raw, &opts); err != nil {
		t.Fatal(err)
	}
	if req.Operation != admissionv1.Connect || req.Kind != (metav1.GroupVersionKind{Version: "v1", Kind: "PodAttachOptions"}) ||
		req.Resource != (metav1.GroupVersionResource{Version: "v1", Resource: "pods"}) || req.Namespace != "default" || req.UserInfo.Username != "admin" ||
		opts.Kind != "PodAttachOptions" || opts.Container != "app" || !opts.Stdin || !opts.Stdout || opts.Stderr || req.OldObject.Raw != nil {
		t.Errorf("attach review = %+v, object %s", req, req.Object.Raw)
	}

	// An allowed exec passes admission and goes on (here to a server without kubelets).
	err = connect("exec", map[string]string{"container": "app", "command": "ls", "stdout": "true"})
	if !apierrors.IsServiceUnavailable(err) {
		t.Errorf("exec after an allowing webhook: %v", err)
	}
	mu.Lock()
	req = seen[len(seen)-1]
	mu.Unlock()
	var execOpts corev1.PodExecOptions
	if err := json.Unmarshal(req.Object.Raw, &execOpts); err != nil {
		t.Fatal(err)
	}
	if req.Kind.Kind != "PodExecOptions" || req.SubResource != "exec" || len(execOpts.Command) != 1 || execOpts.Command[0] != "ls" {
		t.Errorf("exec review = %+v, object %s", req, req.Object.Raw)
	}

	// The proxy subresource is a CONNECT too, its path in the options.
	err = pods.Get().AbsPath("/api/v1/namespaces/default/pods/to-be-attached/proxy/some/path").Do(ctx).Error()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodProxyOptions to some/path is not allowed") {
		t.Errorf("pods/proxy: %v", err)
	}
	mu.Lock()
	calls := len(seen)
	mu.Unlock()

	// Not registered: port-forward; not a CONNECT: logs.
	if err := connect("portforward", map[string]string{"ports": "80"}); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("portforward: %v", err)
	}
	if err := pods.Get().Namespace("default").Resource("pods").Name("to-be-attached").SubResource("log").Do(ctx).Error(); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("log: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != calls {
		t.Errorf("webhook called for port-forward or logs: %+v", seen[calls:])
	}
}

// TestConnectPolicy: a ValidatingAdmissionPolicy matching CONNECT on pods/exec judges the exec's
// options (object.command) and denies with its message; another command passes admission.
func TestConnectPolicy(t *testing.T) {
	plugin, err := policy.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	e := startEnv(t, &extraPlugins{plugins: []apiserver.AdmissionPlugin{plugin}, start: plugin.Start})
	ctx := context.Background()
	if _, err := e.client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "no-rm"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Connect},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/exec"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "object.kind == 'PodExecOptions' && !object.command.exists(c, c == 'rm')",
				Message:    "no rm through exec",
			}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "no-rm"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "no-rm", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	exec := func(command string) error {
		return e.client.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("p").SubResource("exec").
			Param("container", "app").Param("command", command).Param("stdout", "true").Do(ctx).Error()
	}
	eventually(t, func() error {
		if err := exec("rm"); err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'no-rm' with binding 'no-rm' denied request: no rm through exec") {
			return errFmt("exec rm: %v", err)
		}
		return nil
	})
	if err := exec("ls"); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("exec ls: %v", err)
	}
}
