package cluster

import (
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/storage/value"
)

func TestEncryptionSyncDecision(t *testing.T) {
	now := time.Date(2026, 11, 24, 14, 0, 0, 0, time.UTC)
	local, err := value.NewSecretboxConfig(now)
	if err != nil {
		t.Fatal(err)
	}
	prepared, _, err := value.PrepareSecretbox(local, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		local, cluster []byte
		want           []byte
		wantErr        bool
	}{
		{name: "no cluster copy yet", local: local},
		{name: "the same", local: local, cluster: local},
		{name: "a rotation step", local: local, cluster: prepared, want: prepared},
		{name: "a damaged copy is refused", local: local, cluster: []byte("kind: EncryptionConfiguration\nresources: [{"), wantErr: true},
		{name: "an operator's own shape is refused", local: local, cluster: []byte("kind: EncryptionConfiguration\napiVersion: apiserver.config.k8s.io/v1\nresources:\n- resources: [secrets]\n  providers:\n  - identity: {}\n"), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := encryptionSyncDecision(tc.local, tc.cluster)
			if (err != nil) != tc.wantErr || string(got) != string(tc.want) {
				t.Fatalf("got %q, %v; want %q (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestEncryptionLaggards(t *testing.T) {
	now := time.Date(2026, 11, 24, 14, 0, 0, 0, time.UTC)
	lease := func(host, hash string, age time.Duration) coordinationv1.Lease {
		l := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"kubernetes.io/hostname": host}}}
		if hash != "" {
			l.Annotations = map[string]string{EncryptionConfigAnnotation: hash}
		}
		renewed := metav1.NewMicroTime(now.Add(-age))
		l.Spec.RenewTime = &renewed
		return l
	}
	for _, tc := range []struct {
		name        string
		leases      []coordinationv1.Lease
		wantLive    int
		wantLagging []string
	}{
		{name: "none", wantLive: 0},
		{name: "all caught up", leases: []coordinationv1.Lease{lease("a", "h2", time.Second), lease("b", "h2", 20*time.Second)}, wantLive: 2},
		{name: "one behind", leases: []coordinationv1.Lease{lease("b", "h1", time.Second), lease("a", "h2", time.Second)}, wantLive: 2, wantLagging: []string{"b"}},
		{name: "one without the annotation (its own file)", leases: []coordinationv1.Lease{lease("a", "", time.Second), lease("b", "h2", time.Second)}, wantLive: 2, wantLagging: []string{"a"}},
		{name: "a server gone is not waited for", leases: []coordinationv1.Lease{lease("a", "h2", time.Second), lease("gone", "h1", 10*time.Minute)}, wantLive: 1},
		{name: "never renewed", leases: []coordinationv1.Lease{{}}, wantLive: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live, lagging := encryptionLaggards(tc.leases, "h2", now)
			if live != tc.wantLive || !slices.Equal(lagging, tc.wantLagging) {
				t.Fatalf("live %d lagging %v; want %d %v", live, lagging, tc.wantLive, tc.wantLagging)
			}
		})
	}
}
