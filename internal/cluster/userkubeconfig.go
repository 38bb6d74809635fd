package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/skiff-sh/skiff/internal/pki"
)

// UserKubeconfig returns a kubeconfig for user (CN) in groups (O), with a client certificate
// freshly issued by the node's CA, reaching the API server the way the node's admin kubeconfig
// does (server, CA and TLS server name copied from it). It is how components that run outside
// skiff, such as upstream kube-scheduler and kube-controller-manager, get identities of their own
// (system:kube-scheduler, system:kube-controller-manager), as kubeadm's scheduler.conf and
// controller-manager.conf give them. The node must have started once (its CA and admin kubeconfig
// exist); nothing is written.
func UserKubeconfig(dataDir, user string, groups []string, now time.Time) ([]byte, error) {
	if user == "" {
		return nil, errors.New("user kubeconfig: empty user name")
	}
	cfg := Config{DataDir: dataDir}
	admin, err := clientcmd.LoadFromFile(cfg.AdminKubeconfigPath())
	if err != nil {
		return nil, fmt.Errorf("user kubeconfig for %s: read admin kubeconfig (has skiff server run with --data-dir %s?): %w", user, dataDir, err)
	}
	ctx, ok := admin.Contexts[admin.CurrentContext]
	if !ok {
		return nil, fmt.Errorf("user kubeconfig for %s: admin kubeconfig has no current context", user)
	}
	adminCluster, ok := admin.Clusters[ctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("user kubeconfig for %s: admin kubeconfig has no cluster %q", user, ctx.Cluster)
	}
	dir := filepath.Join(dataDir, "pki")
	caCert, certErr := os.ReadFile(filepath.Join(dir, "ca.crt"))
	caKey, keyErr := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err := errors.Join(certErr, keyErr); err != nil {
		return nil, fmt.Errorf("user kubeconfig for %s: the cluster CA (only a node holding ca.key can issue): %w", user, err)
	}
	ca, err := pki.NewCA(caCert, caKey)
	if err != nil {
		return nil, fmt.Errorf("user kubeconfig for %s: %w", user, err)
	}
	certPEM, keyPEM, err := ca.Issue(pki.Leaf{CommonName: user, Organization: groups, Client: true}, now)
	if err != nil {
		return nil, fmt.Errorf("user kubeconfig for %s: %w", user, err)
	}
	out := clientcmdapi.NewConfig()
	out.Clusters["skiff"] = adminCluster.DeepCopy()
	out.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	out.Contexts["skiff"] = &clientcmdapi.Context{Cluster: "skiff", AuthInfo: user}
	out.CurrentContext = "skiff"
	data, err := clientcmd.Write(*out)
	if err != nil {
		return nil, fmt.Errorf("user kubeconfig for %s: render: %w", user, err)
	}
	return data, nil
}
