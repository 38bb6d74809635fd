package tokencleaner

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

var t0 = time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)

func token(name, exp string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: "u-" + "name"}, Type: tokenType, Data: map[string][]byte{}}
	if exp != "" {
		s.Data[expirationKey] = []byte(exp)
	}
	return s
}

func TestDue(t *testing.T) {
	other := token("bootstrap-token-abcdef", "2026-11-24T05:00:00Z")
	other.Type = corev1.SecretTypeOpaque
	elsewhere := token("bootstrap-token-abcdef", "2026-11-24T05:00:00Z")
	elsewhere.Namespace = "default"
	cases := []struct {
		name   string
		s      *corev1.Secret
		remove bool
		wait   time.Duration
	}{
		{"expired", token("bootstrap-token-abcdef", "2026-11-24T05:00:00Z"), true, 0},
		{"expires now", token("bootstrap-token-abcdef", "2026-11-24T06:00:00Z"), true, 0},
		{"later", token("bootstrap-token-abcdef", "2026-11-24T07:00:00Z"), false, time.Hour},
		{"no expiration", token("bootstrap-token-abcdef", ""), false, 0},
		{"unparsable", token("bootstrap-token-abcdef", "soon"), true, 0},
		{"not a token type", other, false, 0},
		{"not in kube-system", elsewhere, false, 0},
		{"not a token name", token("my-secret", "2026-11-24T05:00:00Z"), false, 0},
	}
	for _, c := range cases {
		remove, wait := Due(c.s, t0)
		if remove != c.remove || wait != c.wait {
			t.Errorf("%s: Due = %v, %v; want %v, %v", c.name, remove, wait, c.remove, c.wait)
		}
	}
}

func TestSyncDeletesOnlyExpired(t *testing.T) {
	expired := token("bootstrap-token-aaaaaa", "2026-11-24T05:00:00Z")
	live := token("bootstrap-token-bbbbbb", "2026-11-24T07:00:00Z")
	live.UID = "u-live"
	client := fake.NewClientset(expired, live)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(t0)
	c, err := New(ctrlutil.Deps{Client: client, Informers: factory, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	for _, key := range []string{"kube-system/bootstrap-token-aaaaaa", "kube-system/bootstrap-token-bbbbbb"} {
		if err := c.Sync(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	var deleted []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "delete" {
			deleted = append(deleted, a.(interface{ GetName() string }).GetName())
		}
	}
	if len(deleted) != 1 || deleted[0] != "bootstrap-token-aaaaaa" {
		t.Fatalf("deleted %v, want only the expired token", deleted)
	}
}
