package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiff-sh/skiff/internal/authz/bootstrappolicy"
	"github.com/skiff-sh/skiff/internal/join"
	"github.com/skiff-sh/skiff/internal/pki"
)

// A joined worker's HTTP data plane reads the TLS Secrets of every namespace, which the node's
// own identity (system:node:<name>, held to its own pods' objects by the Node authorizer) may
// not. Its node asks for a second client certificate, system:skiff:ingress:<name> in
// system:skiff:ingresses (bound to the data plane's ClusterRole), which the CSR approver grants
// a node for itself alone; runCertificates renews it beside the node's own.

// ingressClientFiles are the data plane's certificate and key in the node's pki directory.
func ingressClientFiles(id join.Identity) pki.KeyPairFiles {
	return pki.KeyPairFiles{CertFile: filepath.Join(id.Dir, "ingress-client.crt"), KeyFile: filepath.Join(id.Dir, "ingress-client.key")}
}

// ingressLeafName names the data plane's certificate among nodeLeaves.
const ingressLeafName = "ingress-client"

// renewIngressClientCert asks for the data plane's client certificate when there is none, when
// the one on disk is due, or at once when force (a CA rotation).
func renewIngressClientCert(ctx context.Context, cfg *Config, id join.Identity, client kubernetes.Interface, now time.Time, force bool) error {
	files := ingressClientFiles(id)
	data, err := os.ReadFile(files.CertFile)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	default:
		cert, err := pki.ParseCertificate(data)
		if err == nil && !force && !join.NeedsRenewal(cert, now) {
			return nil
		}
	}
	certPEM, keyPEM, err := join.RequestCertificate(ctx, client, join.CertificateRequest{
		NodeName:     cfg.NodeName,
		CommonName:   bootstrappolicy.SkiffIngressNodePrefix + cfg.NodeName,
		Organization: []string{bootstrappolicy.SkiffIngressGroup},
		SignerName:   certificatesv1.KubeAPIServerClientSignerName,
		Usages:       []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
	})
	if err != nil {
		return fmt.Errorf("HTTP data plane client certificate: %w", err)
	}
	// The key first: a holder that sees the new certificate must find its key.
	if err := pki.WriteFileAtomic(files.KeyFile, keyPEM, 0o600); err != nil {
		return err
	}
	if err := pki.WriteFileAtomic(files.CertFile, certPEM, 0o600); err != nil {
		return err
	}
	cfg.Logger.Info("HTTP data plane client certificate issued", "node", cfg.NodeName)
	return nil
}

// joinedIngressRoles are a joined worker's Ingress roles: its label (as the node) and, when a
// port is on, the data plane as system:skiff:ingress:<node> through the node's balancer, once
// runCertificates has its certificate.
func joinedIngressRoles(cfg *Config, id join.Identity, tlsFiles *nodeClientTLS, nodeClient kubernetes.Interface) []role {
	label := ingressLabelRole(cfg, nodeClient)
	if !cfg.runsIngress() {
		return []role{label}
	}
	return []role{label, {name: "ingress", run: func(ctx context.Context) error {
		files := ingressClientFiles(id)
		if err := waitForFile(ctx, files.CertFile, time.Second); err != nil {
			return err
		}
		holder, err := pki.NewKeyPairHolder([]pki.KeyPairFiles{files})
		if err != nil {
			return fmt.Errorf("HTTP data plane client certificate: %w", err)
		}
		rc := id.RESTConfig(cfg.LBURL(), "ingress")
		rc.TLSClientConfig = rest.TLSClientConfig{ServerName: lbServerName}
		rc, err = withRenewedClientCert(rc, holder, tlsFiles.roots)
		if err != nil {
			return err
		}
		return runIngressDataPlane(ctx, cfg, rc, prometheus.NewRegistry())
	}}}
}

// waitForFile returns once path exists, polling every interval, or with ctx's error.
func waitForFile(ctx context.Context, path string, interval time.Duration) error {
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}
