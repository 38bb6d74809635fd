package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/apiserver/audit"
)

// memoryAuditLog keeps events in memory.
type memoryAuditLog struct {
	mu     sync.Mutex
	events []audit.Event
}

func (m *memoryAuditLog) Write(ev *audit.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, *ev)
}

// byID returns the events of one request, in order.
func (m *memoryAuditLog) byID(id string) []audit.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []audit.Event
	for _, ev := range m.events {
		if string(ev.AuditID) == id {
			out = append(out, ev)
		}
	}
	return out
}

// denyUser allows everyone but one user.
type denyUser string

func (d denyUser) Authorize(_ context.Context, user *UserInfo, _ *RequestInfo) (bool, string) {
	if user.Name == string(d) {
		return false, "denied for the test"
	}
	return true, "allowed for the test"
}

func TestAuditLog(t *testing.T) {
	policy, err := audit.ParsePolicy([]byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitManagedFields: true
rules:
- level: None
  verbs: [watch, list]
- level: RequestResponse
  resources: [{group: "", resources: [configmaps]}]
- level: Metadata
`))
	if err != nil {
		t.Fatal(err)
	}
	log := &memoryAuditLog{}
	c := startTestCluster(t, func(cfg *Config) {
		cfg.Auditor = &audit.Auditor{Policy: policy, Writer: log, Clock: clocktesting.NewFakeClock(testEpoch)}
		cfg.Authorizer = denyUser("mallory")
	})
	ctx := context.Background()

	var auditID string
	admin := rest.CopyConfig(c.admin)
	admin.WrapTransport = captureHeader("Audit-ID", &auditID)
	client := kubernetes.NewForConfigOrDie(admin)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "audited"}, Data: map[string]string{"key": "request-body-marker"}}
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	events := log.byID(auditID)
	if auditID == "" || len(events) != 2 || events[0].Stage != audit.StageRequestReceived || events[1].Stage != audit.StageResponseComplete {
		t.Fatalf("audit ID %q, events %+v", auditID, events)
	}
	done := events[1]
	if done.Level != audit.LevelRequestResponse || done.Verb != "create" || done.User.Username != "admin" ||
		done.ObjectRef == nil || done.ObjectRef.Resource != "configmaps" || done.ObjectRef.Namespace != "default" ||
		done.ResponseStatus == nil || done.ResponseStatus.Code != 201 || done.Annotations["authorization.k8s.io/decision"] != "allow" {
		t.Fatalf("complete event %+v", done)
	}
	if !strings.Contains(string(done.RequestObject), "request-body-marker") || !strings.Contains(string(done.ResponseObject), `"uid"`) {
		t.Fatalf("request object %s, response object %s", done.RequestObject, done.ResponseObject)
	}
	if strings.Contains(string(done.ResponseObject), "managedFields") {
		t.Fatal("managed fields were kept although the policy omits them")
	}
	if events[0].RequestObject != nil {
		t.Fatal("RequestReceived carries the request object")
	}

	// Impersonated and denied: who authenticated, whom it acted as, and the denial.
	mallory := rest.CopyConfig(c.admin)
	mallory.Impersonate = rest.ImpersonationConfig{UserName: "mallory"}
	mallory.WrapTransport = captureHeader("Audit-ID", &auditID)
	_, err = kubernetes.NewForConfigOrDie(mallory).CoreV1().Secrets("default").Get(ctx, "x", metav1.GetOptions{})
	if err == nil {
		t.Fatal("mallory was allowed")
	}
	events = log.byID(auditID)
	if len(events) != 2 {
		t.Fatalf("events of the denied request: %+v", events)
	}
	denied := events[1]
	if denied.Level != audit.LevelMetadata || denied.User.Username != "admin" || denied.ImpersonatedUser == nil ||
		denied.ImpersonatedUser.Username != "mallory" || denied.ResponseStatus.Code != 403 ||
		denied.ResponseStatus.Reason != metav1.StatusReasonForbidden || denied.Annotations["authorization.k8s.io/decision"] != "forbid" {
		raw, _ := json.Marshal(denied)
		t.Fatalf("denied event %s", raw)
	}
	if denied.RequestObject != nil || denied.ResponseObject != nil {
		t.Fatal("a Metadata event carries objects")
	}
}

// captureHeader records a response header of every request through the transport.
func captureHeader(name string, into *string) func(rt http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if resp != nil {
				*into = resp.Header.Get(name)
			}
			return resp, err
		})
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
