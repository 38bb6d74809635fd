package etcd

import (
	"strings"
	"testing"

	"github.com/skiff-sh/skiff/internal/etcdapi"
)

func TestRestartSafe(t *testing.T) {
	tests := []struct {
		name    string
		members []etcdapi.Member
		wantErr string
	}{
		{name: "every voter healthy", members: []etcdapi.Member{{Name: "a", Healthy: true}, {Name: "b", Healthy: true}, {Name: "c", Healthy: true}}},
		{name: "one member alone", members: []etcdapi.Member{{Name: "a", Healthy: true}}},
		{name: "a voter down: its restart would leave no quorum", members: []etcdapi.Member{{Name: "a", Healthy: true}, {Name: "b", Error: "connection refused"}, {Name: "c", Healthy: true}},
			wantErr: "members not healthy: b (connection refused)"},
		{name: "an unnamed one (not started yet) by its ID", members: []etcdapi.Member{{Name: "a", Healthy: true}, {ID: "8e9e05c52164694d"}},
			wantErr: "8e9e05c52164694d"},
		{name: "a learner does not count", members: []etcdapi.Member{{Name: "a", Healthy: true}, {Name: "l", IsLearner: true}}},
		{name: "no list", wantErr: "no members"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := restartSafe(tt.members)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
