package cluster

import (
	"slices"
	"testing"

	"github.com/skiff-sh/skiff/internal/etcdapi"
)

func TestVotingClientURLs(t *testing.T) {
	cases := []struct {
		name    string
		members []etcdapi.Member
		want    []string
	}{
		{"none", nil, nil},
		{"voters sorted, learners left out", []etcdapi.Member{
			{Name: "e-3", ClientURLs: []string{"https://10.0.0.3:2379"}},
			{Name: "cp-1", ClientURLs: []string{"https://10.0.0.1:2379"}},
			{Name: "e-4", ClientURLs: []string{"https://10.0.0.4:2379"}, IsLearner: true},
		}, []string{"https://10.0.0.1:2379", "https://10.0.0.3:2379"}},
		{"a member not started yet has no client URL", []etcdapi.Member{
			{Name: "cp-1", ClientURLs: []string{"https://10.0.0.1:2379"}}, {ID: "ab"},
		}, []string{"https://10.0.0.1:2379"}},
		{"duplicates once", []etcdapi.Member{
			{Name: "a", ClientURLs: []string{"https://10.0.0.1:2379", "https://10.0.0.1:2379"}},
		}, []string{"https://10.0.0.1:2379"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := votingClientURLs(c.members); !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestOnClusterEtcd(t *testing.T) {
	cases := []struct {
		cfg  Config
		want bool
	}{
		{Config{Roles: []Role{RoleControlPlane}, Server: "https://a:6443"}, true},
		{Config{Roles: []Role{RoleControlPlane}, Server: "https://a:6443", EtcdConfig: EtcdConfig{EtcdServers: []string{"https://e:2379"}}}, false},
		{Config{Roles: []Role{RoleEtcd, RoleControlPlane}, Server: "https://a:6443"}, false},
		{Config{Roles: []Role{RoleControlPlane}, EtcdConfig: EtcdConfig{EtcdServers: []string{"https://e:2379"}}}, false},
	}
	for _, c := range cases {
		if got := c.cfg.onClusterEtcd(); got != c.want {
			t.Errorf("%+v: onClusterEtcd %v, want %v", c.cfg, got, c.want)
		}
	}
}
