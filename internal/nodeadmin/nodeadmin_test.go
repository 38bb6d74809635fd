package nodeadmin

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/etcdapi"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func node(name string, ready corev1.ConditionStatus, roles ...string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	for _, r := range roles {
		n.Labels[NodeRoleLabelPrefix+r] = ""
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}
	n.Status.NodeInfo.KubeletVersion = "v1.37.2"
	return n
}

func lease(name, holder string, renewedAgo time.Duration, labels map[string]string) coordinationv1.Lease {
	return coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Labels: labels},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(holder),
			LeaseDurationSeconds: ptr.To(int32(15)),
			AcquireTime:          &metav1.MicroTime{Time: now.Add(-time.Hour)},
			RenewTime:            &metav1.MicroTime{Time: now.Add(-renewedAgo)},
		},
	}
}

func TestBuildReport(t *testing.T) {
	apiLabels := map[string]string{APIServerIdentityKey: APIServerIdentityName, HostnameLabel: "cp1"}
	r := BuildReport(Inputs{
		Now:           now,
		ServerVersion: "v1.37.2-skiff",
		Nodes:         []corev1.Node{node("w1", corev1.ConditionTrue, "worker"), node("cp1", corev1.ConditionFalse, "etcd", "control-plane")},
		Leases: []coordinationv1.Lease{
			lease("apiserver-b", "apiserver-b_1", time.Minute, apiLabels),
			lease("apiserver-a", "apiserver-a_1", time.Second, apiLabels),
			lease("kube-scheduler", "cp1_abc", 2*time.Second, nil),
			lease("w1", "w1", time.Second, nil), // a node lease: not shown
		},
		Etcd: &etcdapi.MemberList{Quorum: true, LeaderID: "a", Members: []etcdapi.Member{{ID: "a", Name: "cp1", IsLeader: true, Healthy: true, RaftIndex: 42}}},
	})
	if len(r.Nodes) != 2 || r.Nodes[0].Name != "cp1" || strings.Join(r.Nodes[0].Roles, ",") != "control-plane,etcd" || r.Nodes[0].Ready != "False" {
		t.Fatalf("nodes = %+v", r.Nodes)
	}
	if len(r.APIServers) != 2 || r.APIServers[0].Identity != "apiserver-a" || !r.APIServers[0].Healthy || r.APIServers[1].Healthy {
		t.Fatalf("API servers = %+v, want a healthy, b stale", r.APIServers)
	}
	if len(r.Leaders) != 2 || r.Leaders[0].Holder != "cp1_abc" || !r.Leaders[0].Fresh || r.Leaders[0].Since == nil ||
		r.Leaders[1].Component != ControllerLease || r.Leaders[1].Holder != "" {
		t.Fatalf("leaders = %+v", r.Leaders)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cp1", "control-plane,etcd", "ETCD (1 members, quorum)", "apiserver-a", "kube-scheduler", "cp1_abc", "kube-controller-manager"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil || !strings.Contains(js.String(), `"leaderID": "a"`) {
		t.Errorf("json = %s, %v", js.String(), err)
	}
}

// TestAPIServerHealthIsRenewal: identity Leases last an hour but are renewed every 10 s; a
// server killed 90 s ago holds an unexpired Lease and must not be called healthy (issue 32).
func TestAPIServerHealthIsRenewal(t *testing.T) {
	identity := func(name, host string, renewedAgo time.Duration) coordinationv1.Lease {
		l := lease(name, name+"_1", renewedAgo, map[string]string{APIServerIdentityKey: APIServerIdentityName, HostnameLabel: host})
		l.Spec.LeaseDurationSeconds = ptr.To(int32(3600))
		return l
	}
	r := BuildReport(Inputs{Now: now, Leases: []coordinationv1.Lease{
		identity("apiserver-a", "cp1", 4*time.Second),
		identity("apiserver-b", "cp2", 90*time.Second), // kill -9 90 s ago
		identity("apiserver-c", "cp3", 25*time.Second), // two renewals late: still alive
	}})
	want := []APIServerStatus{
		{Identity: "apiserver-a", Host: "cp1", Healthy: true, RenewedAgo: "4s"},
		{Identity: "apiserver-b", Host: "cp2", Healthy: false, RenewedAgo: "1m30s"},
		{Identity: "apiserver-c", Host: "cp3", Healthy: true, RenewedAgo: "25s"},
	}
	if !slices.Equal(r.APIServers, want) {
		t.Fatalf("API servers = %+v, want %+v", r.APIServers, want)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text, now); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`apiserver-b\s+cp2\s+false\s+1m30s ago`).MatchString(text.String()) {
		t.Errorf("text does not show apiserver-b unhealthy, renewed 1m30s ago:\n%s", text.String())
	}
}

func TestPlanRemoval(t *testing.T) {
	members := &etcdapi.MemberList{Members: []etcdapi.Member{{ID: "a1", Name: "cp1"}, {ID: "b2", Name: "cp2"}}}
	cordoned := node("cp2", corev1.ConditionTrue)
	cordoned.Spec.Unschedulable = true
	n := node("cp2", corev1.ConditionTrue)
	tests := []struct {
		name    string
		node    *corev1.Node
		members *etcdapi.MemberList
		want    RemovalPlan
	}{
		{name: "etcd node", node: &n, members: members, want: RemovalPlan{Node: "cp2", Cordon: true, EtcdMemberID: "b2", DeleteNode: true}},
		{name: "already cordoned", node: &cordoned, members: members, want: RemovalPlan{Node: "cp2", EtcdMemberID: "b2", DeleteNode: true}},
		{name: "node object gone, member left", members: members, want: RemovalPlan{Node: "cp2", EtcdMemberID: "b2"}},
		{name: "worker", node: &n, members: &etcdapi.MemberList{}, want: RemovalPlan{Node: "cp2", Cordon: true, DeleteNode: true}},
		{name: "nothing", members: &etcdapi.MemberList{}, want: RemovalPlan{Node: "cp2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PlanRemoval("cp2", tt.node, tt.members); got != tt.want {
				t.Fatalf("plan = %+v, want %+v", got, tt.want)
			}
		})
	}
	if !PlanRemoval("x", nil, nil).Empty() {
		t.Fatal("nothing to remove: want an empty plan")
	}
}
