package etcd3

import "testing"

func TestProgressVerdict(t *testing.T) {
	eps := []string{"a", "b", "c"}
	for _, c := range []struct {
		name      string
		endpoints []string
		read      map[string]bool
		want      bool
	}{
		{"nothing read yet", eps, map[string]bool{}, false},
		{"one read and sound, two down", eps, map[string]bool{"a": true}, true},
		{"all sound", eps, map[string]bool{"a": true, "b": true, "c": true}, true},
		{"one unsound", eps, map[string]bool{"a": true, "b": false}, false},
		{"a verdict of a removed endpoint is ignored", eps, map[string]bool{"a": true, "gone": false}, true},
		{"no endpoints: in-process", nil, map[string]bool{}, true},
	} {
		if got := progressVerdict(c.endpoints, c.read); got != c.want {
			t.Errorf("%s: %t, want %t", c.name, got, c.want)
		}
	}
}
