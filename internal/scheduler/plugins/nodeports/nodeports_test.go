package nodeports

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

func TestFilter(t *testing.T) {
	node := st.MakeNode().Name("n").Obj()
	existing := []*v1.Pod{st.MakePod().Name("e").Node("n").HostPort("10.0.0.1", v1.ProtocolTCP, 8080).Obj()}
	const conflict = "Unschedulable: " + ErrReason
	tests := []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{"no host ports", st.MakePod().Req(st.Res{}).Obj(), ""},
		{"same ip and port", st.MakePod().HostPort("10.0.0.1", v1.ProtocolTCP, 8080).Obj(), conflict},
		{"wildcard ip conflicts", st.MakePod().HostPort("", v1.ProtocolTCP, 8080).Obj(), conflict},
		{"other ip", st.MakePod().HostPort("10.0.0.2", v1.ProtocolTCP, 8080).Obj(), ""},
		{"other protocol", st.MakePod().HostPort("10.0.0.1", v1.ProtocolUDP, 8080).Obj(), ""},
		{"other port", st.MakePod().HostPort("10.0.0.1", v1.ProtocolTCP, 8081).Obj(), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := st.Verdict(st.RunFilter(NodePorts{}, tc.pod, []*v1.Node{node}, existing)["n"]); got != tc.want {
				t.Fatalf("got %q want %q", got, tc.want)
			}
		})
	}
}
