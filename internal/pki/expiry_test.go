package pki

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheckExpiries(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	cert := func(name string, left time.Duration) CertExpiry {
		return CertExpiry{Name: name, Path: "/pki/" + name + ".crt", NotAfter: now.Add(left)}
	}
	tests := []struct {
		name                       string
		previous, current          []CertExpiry
		expiring, renewed, damaged []string
	}{
		{name: "all fresh", previous: []CertExpiry{cert("ca", 3650*day)}, current: []CertExpiry{cert("ca", 3650*day), cert("apiserver", 300*day)}},
		{name: "expiring within 30 days", current: []CertExpiry{cert("apiserver", 29*day), cert("ca", 31*day)}, expiring: []string{"apiserver"}},
		{name: "exactly 30 days counts", current: []CertExpiry{cert("apiserver", 30*day)}, expiring: []string{"apiserver"}},
		{name: "expired", current: []CertExpiry{cert("kubelet", -day)}, expiring: []string{"kubelet"}},
		{name: "renewed since the last check", previous: []CertExpiry{cert("apiserver", 10*day), cert("ca", 3650*day)},
			current: []CertExpiry{cert("apiserver", 365*day), cert("ca", 3650*day)}, renewed: []string{"apiserver"}},
		{name: "new file is not a renewal", previous: nil, current: []CertExpiry{cert("apiserver", 365*day)}},
		{name: "damaged", current: []CertExpiry{{Name: "etcd", Path: "/pki/etcd.crt", Error: "no PEM"}}, damaged: []string{"etcd"}},
	}
	names := func(es []CertExpiry) string {
		var out []string
		for _, e := range es {
			out = append(out, e.Name)
		}
		return strings.Join(out, ",")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckExpiries(tt.previous, tt.current, now, RenewWithin)
			if names(got.Expiring) != strings.Join(tt.expiring, ",") || names(got.Renewed) != strings.Join(tt.renewed, ",") || names(got.Damaged) != strings.Join(tt.damaged, ",") {
				t.Errorf("expiring %q renewed %q damaged %q, want %v %v %v", names(got.Expiring), names(got.Renewed), names(got.Damaged), tt.expiring, tt.renewed, tt.damaged)
			}
		})
	}
}

func TestReadExpiries(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	ca, err := LoadOrCreateCA(dir, "ca", "test-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ca.EnsureLeaf(dir, "apiserver", Leaf{CommonName: "apiserver", Server: true}, now); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.crt"), []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadExpiries(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Name != "apiserver" || got[1].Name != "broken" || got[2].Name != "ca" {
		t.Fatalf("ReadExpiries = %+v, want apiserver, broken, ca", got)
	}
	if got[0].Error != "" || !got[0].NotAfter.After(now.Add(RenewWithin)) || got[1].Error == "" {
		t.Errorf("ReadExpiries = %+v", got)
	}
	if none, err := ReadExpiries(filepath.Join(dir, "absent")); err != nil || len(none) != 0 {
		t.Errorf("absent dir: %v %v", none, err)
	}
}
