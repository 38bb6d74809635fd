package cluster

import (
	"context"
	"crypto/x509"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiff-sh/skiff/internal/join"
	"github.com/skiff-sh/skiff/internal/pki"
)

// rotationCAs is an old and a new CA with a leaf of each.
type rotationCAs struct {
	oldPEM, newPEM   []byte
	oldLeaf, newLeaf *x509.Certificate
}

func newRotationCAs(t *testing.T) rotationCAs {
	t.Helper()
	now := time.Now()
	var out rotationCAs
	leafOf := func(certPEM, keyPEM []byte) *x509.Certificate {
		ca, err := pki.NewCA(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		leafPEM, _, err := ca.Issue(pki.Leaf{CommonName: "system:node:w1", Organization: []string{"system:nodes"}, Client: true}, now)
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := pki.ParseCertificate(leafPEM)
		if err != nil {
			t.Fatal(err)
		}
		return leaf
	}
	var oldKey, newKey []byte
	var err error
	if out.oldPEM, oldKey, err = pki.GenerateCA("old", now); err != nil {
		t.Fatal(err)
	}
	if out.newPEM, newKey, err = pki.GenerateCA("new", now); err != nil {
		t.Fatal(err)
	}
	out.oldLeaf, out.newLeaf = leafOf(out.oldPEM, oldKey), leafOf(out.newPEM, newKey)
	return out
}

func TestNodeTrustPlan(t *testing.T) {
	r := newRotationCAs(t)
	bundleOf := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	tests := []struct {
		name      string
		local     []byte
		published []byte
		leaves    map[string]*x509.Certificate
		want      nodeTrust
		wantErr   string
	}{
		{name: "nothing published", local: r.oldPEM, leaves: map[string]*x509.Certificate{"client": r.oldLeaf}},
		{name: "the same bundle", local: r.oldPEM, published: r.oldPEM, leaves: map[string]*x509.Certificate{"client": r.oldLeaf}},
		{name: "trust: both, the old one signs", local: r.oldPEM, published: bundleOf(r.oldPEM, r.newPEM),
			leaves: map[string]*x509.Certificate{"client": r.oldLeaf, "serving-0": r.oldLeaf}, want: nodeTrust{write: true}},
		{name: "sign: the new one first", local: bundleOf(r.oldPEM, r.newPEM), published: bundleOf(r.newPEM, r.oldPEM),
			leaves: map[string]*x509.Certificate{"client": r.oldLeaf, "serving-0": r.oldLeaf}, want: nodeTrust{write: true, renew: []string{"client", "serving-0"}}},
		{name: "sign: one certificate re-issued already", local: bundleOf(r.newPEM, r.oldPEM), published: bundleOf(r.newPEM, r.oldPEM),
			leaves: map[string]*x509.Certificate{"client": r.newLeaf, "serving-0": r.oldLeaf}, want: nodeTrust{renew: []string{"serving-0"}}},
		{name: "retire", local: bundleOf(r.newPEM, r.oldPEM), published: r.newPEM,
			leaves: map[string]*x509.Certificate{"client": r.newLeaf}, want: nodeTrust{write: true}},
		{name: "a broken bundle is not taken", local: r.oldPEM, published: []byte("not PEM"), wantErr: "published CA bundle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := nodeTrustPlan(tt.local, tt.published, tt.leaves)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.write != tt.want.write || !slices.Equal(got.renew, tt.want.renew) {
				t.Fatalf("plan %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestSyncClusterCAFromClusterInfo: a joined node takes the bundle kube-public/cluster-info
// carries as its ca.crt and names its certificates the bundle's signer did not sign; without
// cluster-info it keeps its ca.crt.
func TestSyncClusterCAFromClusterInfo(t *testing.T) {
	r := newRotationCAs(t)
	id := join.Identity{Dir: t.TempDir()}
	if err := os.WriteFile(id.CAPath(), r.oldPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	leaves := map[string]*x509.Certificate{"client": r.oldLeaf}
	client := fake.NewClientset()
	ctx := context.Background()
	if renew, err := syncClusterCA(ctx, client, id, leaves); err != nil || len(renew) > 0 {
		t.Fatalf("without cluster-info: renew %v, err %v", renew, err)
	}
	bundle := slices.Concat(r.newPEM, r.oldPEM)
	data, err := clusterInfoData("https://10.0.0.1:6443", bundle)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-info", Namespace: "kube-public"}, Data: data}
	if _, err := client.CoreV1().ConfigMaps("kube-public").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	renew, err := syncClusterCA(ctx, client, id, leaves)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(renew, []string{"client"}) {
		t.Fatalf("renew %v, want the client certificate of the old CA", renew)
	}
	if got := mustRead(t, id.CAPath()); string(got) != string(bundle) {
		t.Fatalf("ca.crt is not the published bundle:\n%s", got)
	}
}
