package audit

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

const examplePolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: ["system:kube-proxy"]
  verbs: ["watch"]
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: Metadata
  resources:
  - group: ""
    resources: ["secrets", "configmaps"]
- level: RequestResponse
  resources:
  - group: ""
    resources: ["pods/*"]
  - group: "apps"
    resources: ["*/scale"]
  namespaces: ["prod"]
- level: Request
  userGroups: ["system:authenticated"]
  omitStages: [ResponseStarted]
- level: Metadata
`

func TestPolicyDecide(t *testing.T) {
	p, err := ParsePolicy([]byte(examplePolicy))
	if err != nil {
		t.Fatal(err)
	}
	res := func(verb, group, resource, sub, ns string) Attributes {
		return Attributes{User: "jane", Groups: []string{"system:authenticated"}, Verb: verb, ResourceRequest: true, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns}
	}
	for _, tc := range []struct {
		name  string
		attrs Attributes
		want  Level
	}{
		{"proxy watches", Attributes{User: "system:kube-proxy", Verb: "watch", ResourceRequest: true, Resource: "endpointslices"}, LevelNone},
		{"health", Attributes{User: "x", Verb: "get", Path: "/healthz/etcd"}, LevelNone},
		{"secrets at metadata", res("get", "", "secrets", "", "prod"), LevelMetadata},
		{"secret subresource not named", res("get", "", "secrets", "status", "prod"), LevelRequest},
		{"pods/* covers pods", res("get", "", "pods", "", "prod"), LevelRequestResponse},
		{"pods/* covers pods/log", res("get", "", "pods", "log", "prod"), LevelRequestResponse},
		{"other namespace", res("get", "", "pods", "log", "dev"), LevelRequest},
		{"*/scale", res("update", "apps", "deployments", "scale", "prod"), LevelRequestResponse},
		{"apps without scale", res("update", "apps", "deployments", "", "prod"), LevelRequest},
		{"unauthenticated groups fall through", Attributes{User: "x", Verb: "get", Path: "/metrics"}, LevelMetadata},
	} {
		if got := p.Decide(tc.attrs); got.Level != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got.Level, tc.want)
		}
	}
	d := p.Decide(res("create", "", "services", "", "x"))
	if len(d.OmitStages) != 2 {
		t.Errorf("omitted stages %v: want the policy's and the rule's", d.OmitStages)
	}
}

func TestParsePolicyErrors(t *testing.T) {
	for _, tc := range []struct{ name, policy, want string }{
		{"bad level", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Everything}]\n", "is not None"},
		{"mixed", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: [/x], namespaces: [a]}]\n", "cannot be combined"},
		{"bad stage", "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Sometime]\nrules: [{level: None}]\n", "unknown stage"},
		{"wrong kind", "apiVersion: v1\nkind: ConfigMap\nrules: [{level: None}]\n", "want Policy"},
		{"no rules", "apiVersion: audit.k8s.io/v1\nkind: Policy\n", "at least one rule"},
		{"unknown field", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, user: [x]}]\n", "unknown field"},
	} {
		if _, err := ParsePolicy([]byte(tc.policy)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestFileWriterRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC))
	w, err := NewFileWriter(path, 600, 2, clk, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 20 {
		clk.Step(time.Second)
		w.Write(&Event{Level: LevelMetadata, AuditID: "id", Stage: StageResponseComplete, Verb: "get", RequestURI: "/api/v1/pods?i=" + strings.Repeat("x", i)})
	}
	backups, _ := filepath.Glob(filepath.Join(dir, "audit-*.log"))
	if len(backups) != 2 {
		t.Fatalf("backups %v, want the 2 newest kept", backups)
	}
	for _, f := range append(backups, path) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 600 {
			t.Errorf("%s grew to %d bytes past the 600-byte limit", f, len(data))
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var ev Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Verb != "get" {
				t.Fatalf("%s: line %q is not an event: %v", f, line, err)
			}
		}
	}
}
