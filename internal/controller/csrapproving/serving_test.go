package csrapproving

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"slices"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

func servingCSR(t *testing.T, cn, user string, dns []string, ips ...string) (*certificatesv1.CertificateSigningRequest, *x509.CertificateRequest) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: []string{"system:nodes"}}, DNSNames: dns}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := x509.ParseCertificateRequest(der)
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "serving-csr"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeletServingSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
			Username:   user,
			Groups:     []string{NodesGroup, "system:authenticated"},
		},
	}, req
}

func workerNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "172.31.5.2"}, {Type: corev1.NodeHostName, Address: "worker-1"},
	}}}
}

func TestServingRequestMatchesNode(t *testing.T) {
	cases := []struct {
		name    string
		cn      string
		user    string
		dns     []string
		ips     []string
		approve bool
	}{
		{"own names", "system:node:worker-1", "system:node:worker-1", []string{"worker-1"}, []string{"172.31.5.2"}, true},
		{"only the IP", "system:node:worker-1", "system:node:worker-1", nil, []string{"172.31.5.2"}, true},
		{"another node's IP", "system:node:worker-1", "system:node:worker-1", []string{"worker-1"}, []string{"172.31.6.2"}, false},
		{"a foreign DNS name", "system:node:worker-1", "system:node:worker-1", []string{"kubernetes.default"}, nil, false},
		{"loopback is not the node's", "system:node:worker-1", "system:node:worker-1", nil, []string{"127.0.0.1"}, false},
		{"for another node", "system:node:worker-1", "system:node:worker-2", []string{"worker-1"}, nil, false},
	}
	for _, c := range cases {
		csr, req := servingCSR(t, c.cn, c.user, c.dns, c.ips...)
		err := ServingRequestMatchesNode(csr, req, workerNode())
		if (err == nil) != c.approve {
			t.Errorf("%s: err = %v, want approve=%v", c.name, err, c.approve)
		}
	}
}

func TestSyncApprovesOwnServingRequest(t *testing.T) {
	csr, _ := servingCSR(t, "system:node:worker-1", "system:node:worker-1", []string{"worker-1"}, "172.31.5.2")
	node := workerNode()
	env := ctrltest.NewEnv(csr, node)
	c, err := New(env.Deps, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Certificates().V1().CertificateSigningRequests().Informer(), csr)
	ctrltest.Seed(t, env.Factory.Core().V1().Nodes().Informer(), node)
	if err := c.Sync(context.Background(), csr.Name); err != nil {
		t.Fatal(err)
	}
	if got, want := ctrltest.Describe(env.Writes()), []string{"update certificatesigningrequests/approval serving-csr"}; !slices.Equal(got, want) {
		t.Fatalf("actions %q, want %q", got, want)
	}
}

func TestSyncRetriesServingRequestOfUnregisteredNode(t *testing.T) {
	csr, _ := servingCSR(t, "system:node:worker-1", "system:node:worker-1", []string{"worker-1"})
	env := ctrltest.NewEnv(csr)
	c, err := New(env.Deps, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Certificates().V1().CertificateSigningRequests().Informer(), csr)
	if err := c.Sync(context.Background(), csr.Name); err == nil {
		t.Fatal("a request of a node not registered yet was not retried")
	}
	if len(env.Writes()) != 0 {
		t.Fatalf("wrote %v", ctrltest.Describe(env.Writes()))
	}
}

func TestSyncRetriesServingRequestBeforeAddresses(t *testing.T) {
	csr, _ := servingCSR(t, "system:node:worker-1", "system:node:worker-1", []string{"worker-1"}, "172.31.5.2")
	node := workerNode()
	node.Status.Addresses = nil
	env := ctrltest.NewEnv(csr, node)
	c, err := New(env.Deps, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Certificates().V1().CertificateSigningRequests().Informer(), csr)
	ctrltest.Seed(t, env.Factory.Core().V1().Nodes().Informer(), node)
	if err := c.Sync(context.Background(), csr.Name); err == nil {
		t.Fatal("a request of a node without reported addresses was not retried")
	}
	if len(env.Writes()) != 0 {
		t.Fatalf("wrote %v", ctrltest.Describe(env.Writes()))
	}
}
