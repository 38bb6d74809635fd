package framework_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins"
)

func TestStatus(t *testing.T) {
	var nilStatus *framework.Status
	if !nilStatus.IsSuccess() || nilStatus.Code() != framework.Success || nilStatus.AsError() != nil {
		t.Fatal("nil status must be success")
	}
	s := framework.NewStatus(framework.Unschedulable, "Insufficient cpu", "Too many pods").WithPlugin("NodeResourcesFit")
	if !s.IsRejected() || s.Message() != "Insufficient cpu, Too many pods" || s.Plugin() != "NodeResourcesFit" {
		t.Fatalf("unexpected %v", s)
	}
	e := framework.AsStatus(errors.New("boom"))
	if e.Code() != framework.Error || e.AsError().Error() != "boom" || e.IsRejected() {
		t.Fatalf("unexpected %v", e)
	}
	if framework.NewStatus(framework.Skip).AsError() != nil {
		t.Fatal("skip is not an error")
	}
}

func TestFitErrorMessage(t *testing.T) {
	fe := &framework.FitError{NumAllNodes: 5, Diagnosis: framework.Diagnosis{
		NodeToStatus: framework.NodeToStatus{
			"a": framework.NewStatus(framework.Unschedulable, "Insufficient cpu"),
			"b": framework.NewStatus(framework.Unschedulable, "Insufficient cpu"),
			"c": framework.NewStatus(framework.Unschedulable, "Insufficient cpu"),
			"d": framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"),
			"e": framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"),
		},
		PostFilterMsg: "preemption: 0/5 nodes are available: 2 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod.",
	}}
	want := "0/5 nodes are available: 2 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 3 Insufficient cpu. " +
		"preemption: 0/5 nodes are available: 2 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod."
	if got := fe.Error(); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	fe.Diagnosis.PostFilterMsg = "preemption: not eligible due to preemptionPolicy=Never."
	if got := fe.Error(); !strings.HasSuffix(got, "3 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.") {
		t.Fatalf("got %q", got)
	}
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfigProfiles(t *testing.T) {
	path := writeConfig(t, `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 50
leaderElection:
  leaseDuration: 4s
  renewDeadline: 2s
  retryPeriod: 1s
profiles:
- schedulerName: default-scheduler
- schedulerName: packer
  plugins:
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
      - name: ImageLocality
      enabled:
      - name: NodeResourcesFit
        weight: 5
    postFilter:
      disabled:
      - name: "*"
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
`)
	cfg, err := framework.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Profiles) != 2 || *cfg.PercentageOfNodesToScore != 50 || cfg.LeaderElection.LeaseDuration.Seconds() != 4 ||
		cfg.LeaderElection.ResourceName != "kube-scheduler" || cfg.LeaderElection.ResourceNamespace != "kube-system" || *cfg.PodMaxBackoffSeconds != 10 {
		t.Fatalf("unexpected config %+v", cfg)
	}
	def, err := framework.NewFramework(plugins.NewInTreeRegistry(), plugins.DefaultPlugins(), cfg.Profiles[0], framework.Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantDefaultScore := []string{"TaintToleration:3", "NodeAffinity:2", "NodeResourcesFit:1", "InterPodAffinity:2", "PodTopologySpread:2", "NodeResourcesBalancedAllocation:1", "ImageLocality:1"}
	if got := def.PluginsAt()["score"]; !reflect.DeepEqual(got, wantDefaultScore) {
		t.Fatalf("default score plugins %v, want %v", got, wantDefaultScore)
	}
	wantFilter := []string{"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "InterPodAffinity", "PodTopologySpread"}
	if got := def.PluginsAt()["filter"]; !reflect.DeepEqual(got, wantFilter) {
		t.Fatalf("default filter plugins %v, want %v", got, wantFilter)
	}
	packer, err := framework.NewFramework(plugins.NewInTreeRegistry(), plugins.DefaultPlugins(), cfg.Profiles[1], framework.Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantScore := []string{"TaintToleration:3", "NodeAffinity:2", "NodeResourcesFit:5", "InterPodAffinity:2", "PodTopologySpread:2"}
	if got := packer.PluginsAt()["score"]; !reflect.DeepEqual(got, wantScore) {
		t.Fatalf("packer score plugins %v, want %v", got, wantScore)
	}
	if packer.HasPostFilter() {
		t.Fatal("postFilter \"*\" disabled must leave no preemption")
	}
}

func TestLoadConfigErrors(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"unknown field", "profiles:\n- schedulerNam: x\n", "unknown field"},
		{"duplicate profile", "profiles:\n- schedulerName: a\n- schedulerName: a\n", "duplicate"},
		{"bad percentage", "percentageOfNodesToScore: 120\n", "percentageOfNodesToScore"},
		{"lease shorter than renew", "leaderElection:\n  leaseDuration: 1s\n  renewDeadline: 2s\n", "leaseDuration"},
		{"bad weight", "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n        weight: -1\n", "weight"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := framework.LoadConfig(writeConfig(t, tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want error containing %q", err, tc.want)
			}
		})
	}
	if _, err := framework.LoadConfig(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Fatal("missing file must fail")
	}
}

func TestNewFrameworkErrors(t *testing.T) {
	reg, defs := plugins.NewInTreeRegistry(), plugins.DefaultPlugins()
	tests := []struct {
		name    string
		profile framework.Profile
		want    string
	}{
		{"unknown plugin", framework.Profile{SchedulerName: "x", Plugins: &framework.Plugins{Filter: framework.PluginSet{Enabled: []framework.PluginRef{{Name: "Nope"}}}}}, "unknown plugin"},
		{"wrong extension point", framework.Profile{SchedulerName: "x", Plugins: &framework.Plugins{Score: framework.PluginSet{Enabled: []framework.PluginRef{{Name: "NodeName"}}}}}, "does not implement"},
		{"no binder", framework.Profile{SchedulerName: "x", Plugins: &framework.Plugins{Bind: framework.PluginSet{Disabled: []framework.PluginRef{{Name: "*"}}}}}, "bind plugin"},
		{"bad args", framework.Profile{SchedulerName: "x", PluginConfig: []framework.PluginConfig{{Name: "NodeResourcesFit", Args: []byte(`{"scoringStrategy":{"type":"Random"}}`)}}}, "unsupported value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := framework.NewFramework(reg, defs, tc.profile, framework.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestDefaultPreBind: VolumeBinding prepares volumes before the default binder binds.
func TestDefaultPreBind(t *testing.T) {
	def, err := framework.NewFramework(plugins.NewInTreeRegistry(), plugins.DefaultPlugins(), framework.Profile{SchedulerName: "default-scheduler"}, framework.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := def.PluginsAt()
	if !reflect.DeepEqual(at["preBind"], []string{"VolumeBinding"}) || !reflect.DeepEqual(at["reserve"], []string{"VolumeBinding"}) {
		t.Fatalf("preBind %v reserve %v, want VolumeBinding at both", at["preBind"], at["reserve"])
	}
}
