package cluster

import (
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestAPIServerDepsValidate(t *testing.T) {
	full := func() apiServerDeps {
		return apiServerDeps{
			cfg: &Config{}, client: &clientv3.Client{}, metrics: &componentMetrics{}, caches: &cacheSet{},
			admission: &admissionChain{}, explainer: &explainerSlot{},
		}
	}
	tests := []struct {
		name        string
		change      func(*apiServerDeps)
		wantMissing []string
	}{
		{name: "every required one set, the optional ones nil", change: func(*apiServerDeps) {}},
		{name: "no etcd client", change: func(d *apiServerDeps) { d.client = nil }, wantMissing: []string{"client"}},
		{name: "no config and no caches", change: func(d *apiServerDeps) { d.cfg, d.caches = nil, nil }, wantMissing: []string{"cfg", "caches"}},
		{name: "no metrics, admission or explainer", change: func(d *apiServerDeps) { d.metrics, d.admission, d.explainer = nil, nil, nil },
			wantMissing: []string{"metrics", "admission", "explainer"}},
		{name: "nothing", change: func(d *apiServerDeps) { *d = apiServerDeps{} },
			wantMissing: []string{"cfg", "client", "metrics", "caches", "admission", "explainer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := full()
			tt.change(&d)
			err := d.validate()
			if len(tt.wantMissing) == 0 {
				if err != nil {
					t.Fatalf("validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("validate passed, want %v missing", tt.wantMissing)
			}
			if want := "API server dependencies not set: " + strings.Join(tt.wantMissing, ", "); err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
		})
	}
}
