package cluster

import (
	"crypto/x509"
	"testing"
)

func TestSameTrust(t *testing.T) {
	oldCA, newCA := testCACert(t, "old"), testCACert(t, "new")
	certs := func(cs ...*x509.Certificate) []*x509.Certificate { return cs }
	tests := []struct {
		name string
		a, b []*x509.Certificate
		want bool
	}{
		{name: "unchanged", a: certs(oldCA), b: certs(oldCA), want: true},
		{name: "trust phase adds the new CA: restart", a: certs(oldCA), b: certs(oldCA, newCA), want: false},
		{name: "sign phase reorders only: no restart", a: certs(oldCA, newCA), b: certs(newCA, oldCA), want: true},
		{name: "retire phase removes the old CA: restart", a: certs(newCA, oldCA), b: certs(newCA), want: false},
		{name: "another CA altogether", a: certs(oldCA), b: certs(newCA), want: false},
		{name: "a duplicate changes nothing", a: certs(oldCA, oldCA), b: certs(oldCA), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameTrust(tt.a, tt.b); got != tt.want {
				t.Errorf("sameTrust = %v, want %v", got, tt.want)
			}
		})
	}
}
