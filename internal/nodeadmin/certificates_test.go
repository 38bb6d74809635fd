package nodeadmin

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/pki"
)

func TestReportCertificates(t *testing.T) {
	day := 24 * time.Hour
	r := BuildReport(Inputs{Now: now, Certificates: []pki.CertExpiry{
		{Name: "apiserver", NotAfter: now.Add(300 * day)},
		{Name: "kubelet", NotAfter: now.Add(10 * day)},
		{Name: "old", NotAfter: now.Add(-day)},
		{Name: "broken", Error: "no PEM data"},
	}})
	if len(r.Certificates) != 4 {
		t.Fatalf("certificates = %+v", r.Certificates)
	}
	want := []struct {
		soon bool
		in   string
	}{{false, "7200h0m0s"}, {true, "240h0m0s"}, {true, "expired"}, {false, ""}}
	for i, w := range want {
		if c := r.Certificates[i]; c.Soon != w.soon || c.ExpiresIn != w.in {
			t.Errorf("certificate %s: soon %v in %q, want %v %q", c.Name, c.Soon, c.ExpiresIn, w.soon, w.in)
		}
	}
	var out bytes.Buffer
	if err := r.WriteText(&out, now); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"CERTIFICATE", "kubelet", "EXPIRES WITHIN 30 DAYS", "UNREADABLE: no PEM data", "expired"} {
		if !strings.Contains(text, want) {
			t.Errorf("status text lacks %q:\n%s", want, text)
		}
	}
}
