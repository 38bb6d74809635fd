package join

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiff-sh/skiff/internal/pki"
)

// Files of a joined node's identity, in its pki directory.
const (
	CAFile                = "ca.crt"
	KubeletClientCertFile = "kubelet-client.crt"
	KubeletClientKeyFile  = "kubelet-client.key"
	KubeletServingCert    = "kubelet-serving"
)

// Identity is where a joined node's client identity lives.
type Identity struct {
	Dir string
}

// CAPath, CertPath and KeyPath name the node's files.
func (id Identity) CAPath() string   { return filepath.Join(id.Dir, CAFile) }
func (id Identity) CertPath() string { return filepath.Join(id.Dir, KubeletClientCertFile) }
func (id Identity) KeyPath() string  { return filepath.Join(id.Dir, KubeletClientKeyFile) }

// Joined reports whether the node already has its client identity (a restart needs no token).
func (id Identity) Joined() bool {
	for _, p := range []string{id.CAPath(), id.CertPath(), id.KeyPath()} {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return true
}

// RESTConfig is a client of server as the node, reading its certificate files (client-go reloads
// them, so a renewed certificate is picked up without a restart).
func (id Identity) RESTConfig(server, userAgent string) *rest.Config {
	return &rest.Config{
		Host:            server,
		TLSClientConfig: rest.TLSClientConfig{CAFile: id.CAPath(), CertFile: id.CertPath(), KeyFile: id.KeyPath()},
		QPS:             50, Burst: 100,
		UserAgent: userAgent,
	}
}

// ErrCAMismatch is a server whose CA is not the one the join token pins.
var ErrCAMismatch = errors.New("the server's CA does not match the CA hash in the join token")

// FetchCA connects to server and returns the CA its TLS chain ends with, after checking it against
// pin (hex SHA-256 of its SubjectPublicKeyInfo) and that it signed the server's certificate for
// server's host. Nothing is sent but the TLS handshake: the token stays home until the CA is known.
func FetchCA(ctx context.Context, server, pin string) (*x509.Certificate, error) {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("--server %q must be https://HOST:PORT", server)
	}
	host := u.Hostname()
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(host, "443")
	}
	var found *x509.Certificate
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain is verified below against the pinned CA, not against the system's roots.
		InsecureSkipVerify: true, //nolint:gosec
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			certs := make([]*x509.Certificate, 0, len(raw))
			for _, r := range raw {
				c, err := x509.ParseCertificate(r)
				if err != nil {
					return fmt.Errorf("parse server certificate: %w", err)
				}
				certs = append(certs, c)
			}
			ca, err := VerifyChain(certs, host, pin, time.Now())
			if err != nil {
				return err
			}
			found = ca
			return nil
		},
	}
	dialer := &tls.Dialer{Config: cfg, NetDialer: &net.Dialer{Timeout: 10 * time.Second}}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fetch the cluster CA from %s: %w", server, err)
	}
	conn.Close()
	if found == nil {
		return nil, fmt.Errorf("fetch the cluster CA from %s: no certificate", server)
	}
	return found, nil
}

// VerifyChain finds in a server's chain the CA whose public key hashes to pin and checks that it
// signed the leaf for host at now. It is FetchCA's decision, without the network.
func VerifyChain(certs []*x509.Certificate, host, pin string, now time.Time) (*x509.Certificate, error) {
	if len(certs) == 0 {
		return nil, errors.New("the server presented no certificate")
	}
	var ca *x509.Certificate
	var seen []string
	for _, c := range certs[1:] {
		if !c.IsCA {
			continue
		}
		h := CAHash(c)
		seen = append(seen, h)
		if h == pin {
			ca = c
		}
	}
	if ca == nil {
		if len(seen) == 0 {
			return nil, fmt.Errorf("%w: the server sent no CA certificate (is it a skiff server?)", ErrCAMismatch)
		}
		return nil, fmt.Errorf("%w: the token pins %s, the server's CA is %v; refusing to send the token", ErrCAMismatch, pin, seen)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, DNSName: host, CurrentTime: now}); err != nil {
		return nil, fmt.Errorf("the server's certificate is not valid for %s under the pinned CA: %w", host, err)
	}
	return ca, nil
}

// ErrTokenRefused is a bootstrap token the API server does not accept.
var ErrTokenRefused = errors.New("the API server refused the bootstrap token: it has expired, was deleted or is wrong (`skiff token list` on a control-plane node shows the valid ones)")

// Bootstrap joins a node: it checks the server's CA against the token's pin, then with the token
// requests a kubelet client certificate (CN system:node:<nodeName>, O system:nodes) through a
// CertificateSigningRequest, waits for it to be approved and issued, and writes the CA, key and
// certificate into id.Dir. Nothing is written unless all of that succeeded.
func Bootstrap(ctx context.Context, id Identity, server string, token JoinToken, nodeName string, log *slog.Logger) error {
	ca, err := FetchCA(ctx, server, token.CAHash)
	if err != nil {
		return err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	client, err := kubernetes.NewForConfig(&rest.Config{
		Host:            server,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
		BearerToken:     token.Token.String(),
		UserAgent:       "skiff-join",
	})
	if err != nil {
		return err
	}
	log.Info("cluster CA matches the join token; requesting the node's client certificate", "server", server, "node", nodeName)
	certPEM, keyPEM, err := RequestCertificate(ctx, client, CertificateRequest{
		NodeName: nodeName, SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
		Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
	})
	if apierrors.IsUnauthorized(err) {
		return fmt.Errorf("join %s with token %s: %w", server, token.Token.ID, ErrTokenRefused)
	}
	if err != nil {
		return fmt.Errorf("join %s: %w", server, err)
	}
	// The key and certificate first, the CA last: Joined looks for all three.
	for _, f := range []struct {
		path string
		data []byte
	}{{id.KeyPath(), keyPEM}, {id.CertPath(), certPEM}, {id.CAPath(), caPEM}} {
		if err := pki.WriteFileAtomic(f.path, f.data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// CertificateRequest is one certificate a node asks the cluster for.
type CertificateRequest struct {
	NodeName string
	// CommonName and Organization are the subject's; empty, the node's own
	// (system:node:<NodeName> in system:nodes).
	CommonName   string
	Organization []string
	SignerName   string
	Usages       []certificatesv1.KeyUsage
	DNSNames     []string
	IPs          []net.IP
	// Key is the algorithm of the key the request is for (ECDSA P-256 when zero).
	Key pki.KeyAlgorithm
}

// RequestCertificate creates a key and a CertificateSigningRequest for it and waits until the
// request is issued (or denied, or failed, or ctx ends). It returns PEM certificate and key.
func RequestCertificate(ctx context.Context, client kubernetes.Interface, r CertificateRequest) (certPEM, keyPEM []byte, err error) {
	key, err := r.Key.GenerateKey()
	if err != nil {
		return nil, nil, fmt.Errorf("generate %s key: %w", r.Key, err)
	}
	subject := pkix.Name{CommonName: "system:node:" + r.NodeName, Organization: []string{"system:nodes"}}
	if r.CommonName != "" {
		subject = pkix.Name{CommonName: r.CommonName, Organization: r.Organization}
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:  subject,
		DNSNames: r.DNSNames, IPAddresses: r.IPs,
	}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate request: %w", err)
	}
	keyPEM, err = pki.EncodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "node-csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: r.SignerName,
			Usages:     r.Usages,
		},
	}
	created, err := client.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("create certificate signing request: %w", err)
	}
	var issued []byte
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil // transient; the timeout bounds it
		}
		for _, c := range got.Status.Conditions {
			if c.Status != "True" {
				continue
			}
			switch c.Type {
			case certificatesv1.CertificateDenied:
				return false, fmt.Errorf("certificate request %s was denied: %s", created.Name, c.Message)
			case certificatesv1.CertificateFailed:
				return false, fmt.Errorf("certificate request %s failed: %s", created.Name, c.Message)
			}
		}
		if len(got.Status.Certificate) > 0 {
			issued = got.Status.Certificate
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("wait for certificate request %s (%s): %w", created.Name, r.SignerName, err)
	}
	return issued, keyPEM, nil
}

// RenewAt is when a certificate is due for renewal: at 80% of its lifetime (upstream's kubelet
// picks a random point between 70% and 90%).
func RenewAt(cert *x509.Certificate) time.Time {
	life := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotBefore.Add(life * 8 / 10)
}

// NeedsRenewal reports whether cert should be renewed at now.
func NeedsRenewal(cert *x509.Certificate, now time.Time) bool { return !now.Before(RenewAt(cert)) }

func pemEncode(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }
