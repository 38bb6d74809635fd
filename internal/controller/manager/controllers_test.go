package manager

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
)

func TestParseControllers(t *testing.T) {
	all := KnownControllers()
	tests := []struct {
		name    string
		values  []string
		want    []string
		wantErr bool
	}{
		{name: "star enables all", values: []string{"*"}, want: all},
		{name: "star minus one", values: []string{"*", "-garbagecollector"}, want: sets.List(sets.New(all...).Delete("garbagecollector"))},
		{name: "minus before star", values: []string{"-job", "*"}, want: sets.List(sets.New(all...).Delete("job"))},
		{name: "only named", values: []string{"replicaset", "deployment"}, want: []string{"deployment", "replicaset"}},
		{name: "named and star", values: []string{"replicaset", "*"}, want: all},
		{name: "nothing", values: nil, want: nil},
		{name: "only disabled", values: []string{"-job"}, want: nil},
		{name: "unknown", values: []string{"*", "nosuch"}, wantErr: true},
		{name: "unknown disabled", values: []string{"-nosuch"}, wantErr: true},
		{name: "empty", values: []string{""}, wantErr: true},
		{name: "enabled and disabled", values: []string{"job", "-job"}, wantErr: true},
		{name: "spaces trimmed", values: []string{" ttl-after-finished "}, want: []string{"ttl-after-finished"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseControllers(tt.values)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("want error, got %v", sets.List(got))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(sets.New(tt.want...)) {
				t.Fatalf("got %v, want %v", sets.List(got), tt.want)
			}
		})
	}
}

func TestSortedNamesFollowsKnownOrder(t *testing.T) {
	got := sortedNames(sets.New(Disruption, ReplicaSet, Job))
	want := []string{ReplicaSet, Job, Disruption}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}
