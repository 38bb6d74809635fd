package cluster

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/skiff-sh/skiff/internal/authz/bootstrappolicy"
	"github.com/skiff-sh/skiff/internal/join"
	"github.com/skiff-sh/skiff/internal/pki"
)

// A joined node holds no CA key and learns the cluster CA bundle from the cluster, not from an
// operator copying files: `skiff certificate rotate-ca` publishes ca.crt as kube-public's
// cluster-info ConfigMap (kubeadm's object: a kubeconfig whose one cluster carries the CA data),
// which nodes may read (bootstrappolicy.JoinRoles), and each joined node reads it at its
// certificate tick (runCertificates, every minute), over a connection it verified with the
// bundle it has and authenticated with its own certificate, so the bundle is the cluster's word.
// It writes the bundle as its ca.crt, which its trust pools reload, and re-issues through CSRs
// the certificates the bundle's first CA (the signer, by rotate-ca's order) did not sign.

// clusterInfoKey is cluster-info's key holding the kubeconfig, as kubeadm names it.
const clusterInfoKey = "kubeconfig"

// clusterInfoData is cluster-info's data for bundle: a kubeconfig of one cluster, unnamed, as
// kubeadm writes it.
func clusterInfoData(server string, bundle []byte) (map[string]string, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[""] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: bundle}
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, fmt.Errorf("cluster-info kubeconfig: %w", err)
	}
	return map[string]string{clusterInfoKey: string(data)}, nil
}

// clusterInfoBundle is the CA bundle cluster-info's kubeconfig carries.
func clusterInfoBundle(cm *corev1.ConfigMap) ([]byte, error) {
	kc, err := clientcmd.Load([]byte(cm.Data[clusterInfoKey]))
	if err != nil {
		return nil, fmt.Errorf("cluster-info: %w", err)
	}
	for _, c := range kc.Clusters {
		if len(c.CertificateAuthorityData) > 0 {
			if _, err := pki.ParseCertificates(c.CertificateAuthorityData); err != nil {
				return nil, fmt.Errorf("cluster-info CA data: %w", err)
			}
			return c.CertificateAuthorityData, nil
		}
	}
	return nil, fmt.Errorf("cluster-info has no CA data")
}

// PublishClusterCA writes the node's ca.crt into kube-public/cluster-info through its admin
// kubeconfig, for the joined nodes to take (syncClusterCA). It reports whether it changed it.
func PublishClusterCA(ctx context.Context, dataDir string) (bool, error) {
	bundle, err := os.ReadFile(filepath.Join(dataDir, "pki", "ca.crt"))
	if err != nil {
		return false, err
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "admin.kubeconfig"))
	if err != nil {
		return false, fmt.Errorf("admin kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return false, err
	}
	data, err := clusterInfoData(restCfg.Host, bundle)
	if err != nil {
		return false, err
	}
	cms := client.CoreV1().ConfigMaps(metav1.NamespacePublic)
	cur, err := cms.Get(ctx, bootstrappolicy.ClusterInfoConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: bootstrappolicy.ClusterInfoConfigMap, Namespace: metav1.NamespacePublic}, Data: data}, metav1.CreateOptions{})
		return err == nil, wrapClusterInfo(err)
	}
	if err != nil {
		return false, wrapClusterInfo(err)
	}
	if have, err := clusterInfoBundle(cur); err == nil && bytes.Equal(have, bundle) {
		return false, nil
	}
	next := cur.DeepCopy()
	if next.Data == nil {
		next.Data = map[string]string{}
	}
	// kubeadm's signatures (jws-kubeconfig-<id>) sign the old kubeconfig; the rest is kept.
	next.Data[clusterInfoKey] = data[clusterInfoKey]
	_, err = cms.Update(ctx, next, metav1.UpdateOptions{})
	return err == nil, wrapClusterInfo(err)
}

func wrapClusterInfo(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("publish the CA bundle in %s/%s: %w", metav1.NamespacePublic, bootstrappolicy.ClusterInfoConfigMap, err)
}

// nodeTrust is what a joined node does about the published bundle.
type nodeTrust struct {
	// write: the published bundle replaces ca.crt.
	write bool
	// renew are the node's certificates (by name) the bundle's signer did not sign.
	renew []string
}

// nodeTrustPlan decides from the node's ca.crt, the published bundle (nil when the cluster
// publishes none) and the node's certificates by name (pure). The signer is the bundle's first
// CA: rotate-ca puts it there.
func nodeTrustPlan(local, published []byte, leaves map[string]*x509.Certificate) (nodeTrust, error) {
	var out nodeTrust
	bundle := local
	if len(published) > 0 {
		if _, err := pki.ParseCertificates(published); err != nil {
			return nodeTrust{}, fmt.Errorf("published CA bundle: %w", err)
		}
		out.write = !bytes.Equal(local, published)
		bundle = published
	}
	certs, err := pki.ParseCertificates(bundle)
	if err != nil {
		return nodeTrust{}, fmt.Errorf("CA bundle: %w", err)
	}
	signer := certs[0]
	for name, leaf := range leaves {
		if leaf != nil && leaf.CheckSignatureFrom(signer) != nil {
			out.renew = append(out.renew, name)
		}
	}
	slices.Sort(out.renew)
	return out, nil
}

// syncClusterCA takes the published bundle as the node's ca.crt and returns the names of leaves
// to re-issue (among leaves).
func syncClusterCA(ctx context.Context, client kubernetes.Interface, id join.Identity, leaves map[string]*x509.Certificate) ([]string, error) {
	local, err := os.ReadFile(id.CAPath())
	if err != nil {
		return nil, err
	}
	var published []byte
	cm, err := client.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrappolicy.ClusterInfoConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("read %s/%s: %w", metav1.NamespacePublic, bootstrappolicy.ClusterInfoConfigMap, err)
	default:
		if published, err = clusterInfoBundle(cm); err != nil {
			return nil, err
		}
	}
	plan, err := nodeTrustPlan(local, published, leaves)
	if err != nil {
		return nil, err
	}
	if plan.write {
		if err := pki.WriteFileAtomic(id.CAPath(), published, 0o600); err != nil {
			return nil, err
		}
	}
	return plan.renew, nil
}
