package join

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/skiff-sh/skiff/internal/authz/bootstrappolicy"
	"github.com/skiff-sh/skiff/internal/pki"
)

// ControlPlaneGroup is the extra group of a control-plane join token.
const ControlPlaneGroup = bootstrappolicy.ControlPlaneJoinGroup

// Keys are what every control-plane node shares: the cluster CA and the service-account key, and
// where the cluster has them, the etcd CA (so a joining node's etcd member and API server get
// certificates etcd trusts) and the encryption configuration (so every API server reads what
// another sealed).
type Keys struct {
	CACert, CAKey, SAKey []byte
	// Optional: empty when the first node has none.
	EtcdCACert, EtcdCAKey, EncryptionConfig []byte
	// The front-proxy CA, so that every API server's proxy client certificate is trusted by the
	// extension API servers (which read one requestheader CA).
	FrontProxyCACert, FrontProxyCAKey []byte
	// CANextCert and CANextKey (FrontProxyCANextCert and ...Key) are the next cluster (front-proxy)
	// CA while a CA rotation is between its trust and sign phases (ca-next.crt, ca-next.key), so
	// that a control plane that joins then signs with it after the sign phase.
	CANextCert, CANextKey, FrontProxyCANextCert, FrontProxyCANextKey []byte
	// EtcdCANextCert and EtcdCANextKey are the next etcd CA during its rotation (etcd/ca-next.*).
	EtcdCANextCert, EtcdCANextKey []byte
	// RetiredSAKeys are the service-account public keys retired by `skiff certificate
	// rotate-sa-key` and not yet pruned, by file name (sa-retired-<kid>.pub): a control plane
	// that joins after a rotation verifies the tokens they signed too.
	RetiredSAKeys map[string][]byte
}

// The retired service-account keys' file names, as internal/cluster's sakeys.go writes them.
const (
	retiredSAKeyPrefix = "sa-retired-"
	retiredSAKeySuffix = ".pub"
)

func isRetiredSAKey(name string) bool {
	return strings.HasPrefix(name, retiredSAKeyPrefix) && strings.HasSuffix(name, retiredSAKeySuffix) &&
		!strings.ContainsAny(name, `/\`)
}

// Key names in the keys Secret and file names in a node's pki directory.
const (
	keysCACert = "ca.crt"
	keysCAKey  = "ca.key"
	keysSAKey  = "sa.key"
	// The optional ones: Secret key, then path under pki/.
	keysEtcdCACert       = "etcd-ca.crt"
	keysEtcdCAKey        = "etcd-ca.key"
	keysEncryptionConfig = "encryption-config.yaml"
	keysFrontProxyCACert = "front-proxy-ca.crt"
	keysFrontProxyCAKey  = "front-proxy-ca.key"
	keysCANextCert       = "ca-next.crt"
	keysCANextKey        = "ca-next.key"
	keysFrontProxyNext   = "front-proxy-ca-next"
)

// optional lists the optional keys with their Secret keys and files under pki/.
func (k *Keys) optional() []struct {
	secretKey, file string
	data            *[]byte
} {
	return []struct {
		secretKey, file string
		data            *[]byte
	}{
		{keysEtcdCAKey, filepath.Join("etcd", "ca.key"), &k.EtcdCAKey},
		{keysEtcdCACert, filepath.Join("etcd", "ca.crt"), &k.EtcdCACert},
		{keysEncryptionConfig, "encryption-config.yaml", &k.EncryptionConfig},
		{keysFrontProxyCAKey, keysFrontProxyCAKey, &k.FrontProxyCAKey},
		{keysFrontProxyCACert, keysFrontProxyCACert, &k.FrontProxyCACert},
		{keysCANextKey, keysCANextKey, &k.CANextKey},
		{keysCANextCert, keysCANextCert, &k.CANextCert},
		{keysFrontProxyNext + ".key", keysFrontProxyNext + ".key", &k.FrontProxyCANextKey},
		{keysFrontProxyNext + ".crt", keysFrontProxyNext + ".crt", &k.FrontProxyCANextCert},
		{CASecretKey(filepath.Join("etcd", "ca-next.key")), filepath.Join("etcd", "ca-next.key"), &k.EtcdCANextKey},
		{CASecretKey(filepath.Join("etcd", "ca-next.crt")), filepath.Join("etcd", "ca-next.crt"), &k.EtcdCANextCert},
	}
}

// ReadKeys reads a control-plane node's shared keys from its pki directory.
func ReadKeys(dir string) (Keys, error) {
	var k Keys
	for name, dst := range map[string]*[]byte{keysCACert: &k.CACert, keysCAKey: &k.CAKey, keysSAKey: &k.SAKey} {
		data, err := readFile(filepath.Join(dir, name))
		if err != nil {
			return Keys{}, fmt.Errorf("read %s (run this on a control-plane node): %w", name, err)
		}
		*dst = data
	}
	for _, o := range k.optional() {
		if data, err := readFile(filepath.Join(dir, o.file)); err == nil {
			*o.data = data
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Keys{}, fmt.Errorf("list retired service account keys: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() || !isRetiredSAKey(e.Name()) {
			continue
		}
		data, err := readFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return Keys{}, fmt.Errorf("read %s: %w", e.Name(), err)
		}
		if k.RetiredSAKeys == nil {
			k.RetiredSAKeys = map[string][]byte{}
		}
		k.RetiredSAKeys[e.Name()] = data
	}
	return k, nil
}

// Write stores the keys in a joining control-plane node's pki directory, the CA certificate last
// (a node with ca.crt has joined).
func (k Keys) Write(dir string) error {
	type keyFile struct {
		name string
		data []byte
	}
	// The retired keys before sa.key: the node verifies what it will not sign.
	var files []keyFile
	for _, name := range slices.Sorted(maps.Keys(k.RetiredSAKeys)) {
		if !isRetiredSAKey(name) {
			return fmt.Errorf("retired service account key %q: not a key file name", name)
		}
		files = append(files, keyFile{name, k.RetiredSAKeys[name]})
	}
	files = append(files, keyFile{keysCAKey, k.CAKey}, keyFile{keysSAKey, k.SAKey})
	for _, o := range k.optional() {
		if len(*o.data) > 0 {
			files = append(files, keyFile{o.file, *o.data})
		}
	}
	files = append(files, keyFile{keysCACert, k.CACert})
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		if err := pki.WriteFileAtomic(path, f.data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// UploadKeys stores the shared keys in kube-system/skiff-cluster-keys, which only control-plane
// join tokens (and the admin) may read.
func UploadKeys(ctx context.Context, client kubernetes.Interface, k Keys) error {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstrappolicy.ClusterKeysSecret, Namespace: SecretNamespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{keysCACert: k.CACert, keysCAKey: k.CAKey, keysSAKey: k.SAKey},
	}
	for _, o := range k.optional() {
		if len(*o.data) > 0 {
			s.Data[o.secretKey] = *o.data
		}
	}
	// A pruned key leaves the Secret too: the update below replaces the data.
	maps.Copy(s.Data, k.RetiredSAKeys)
	secrets := client.CoreV1().Secrets(SecretNamespace)
	_, err := secrets.Create(ctx, s, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := secrets.Get(ctx, s.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			upd := cur.DeepCopy()
			upd.Data = maps.Clone(s.Data)
			// Once uploaded, the cluster's copy of the encryption configuration is the one every
			// control plane follows (a rotation changes it there first): a node's file, which
			// may not have caught up yet, never replaces it.
			if current, ok := cur.Data[keysEncryptionConfig]; ok {
				upd.Data[keysEncryptionConfig] = current
			}
			_, err = secrets.Update(ctx, upd, metav1.UpdateOptions{})
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("upload cluster keys: %w", err)
	}
	return nil
}

// ClusterEncryptionConfig is the cluster's copy of the encryption configuration skiff keeps for
// --secrets-encryption, from the keys Secret; nil when the Secret or the entry is absent.
func ClusterEncryptionConfig(ctx context.Context, client kubernetes.Interface) ([]byte, error) {
	s, err := client.CoreV1().Secrets(SecretNamespace).Get(ctx, bootstrappolicy.ClusterKeysSecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get the cluster's keys: %w", err)
	}
	return s.Data[keysEncryptionConfig], nil
}

// PublishEncryptionConfig replaces the cluster's copy of the encryption configuration; every
// control-plane node that keeps its own follows it. The keys Secret must exist (UploadKeys).
func PublishEncryptionConfig(ctx context.Context, client kubernetes.Interface, data []byte) error {
	secrets := client.CoreV1().Secrets(SecretNamespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := secrets.Get(ctx, bootstrappolicy.ClusterKeysSecret, metav1.GetOptions{})
		if err != nil {
			return err
		}
		upd := cur.DeepCopy()
		if upd.Data == nil {
			upd.Data = map[string][]byte{}
		}
		upd.Data[keysEncryptionConfig] = data
		_, err = secrets.Update(ctx, upd, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("publish the encryption configuration: %w", err)
	}
	return nil
}

// CAFiles are a CA's files as a control plane's pki directory and the keys Secret hold them: the
// bundle (<name>.crt), the key, and during a rotation the next CA's (<next>.crt, <next>.key). The
// Secret's key is the file's path under pki/ with "/" as "-" (CASecretKey): etcd/ca.crt is
// etcd-ca.crt.
type CAFiles struct {
	Cert, Key, NextCert, NextKey []byte
}

// caEntries are a CA's file names (and Secret keys) with where CAFiles holds them.
func (ca *CAFiles) entries(name, next string) []struct {
	file     string
	data     *[]byte
	optional bool
} {
	return []struct {
		file     string
		data     *[]byte
		optional bool
	}{{name + ".crt", &ca.Cert, false}, {name + ".key", &ca.Key, false}, {next + ".crt", &ca.NextCert, true}, {next + ".key", &ca.NextKey, true}}
}

// CASecretKey is the keys Secret's key of a CA file at path (relative to pki/, "/"-separated or
// not): a Secret's keys hold no "/".
func CASecretKey(path string) string {
	return strings.ReplaceAll(filepath.ToSlash(path), "/", "-")
}

// ReadCAFiles reads the CA name (and the next one, when there is one) from a pki directory.
func ReadCAFiles(dir, name, next string) (CAFiles, error) {
	var ca CAFiles
	for _, f := range ca.entries(name, next) {
		data, err := readFile(filepath.Join(dir, f.file))
		switch {
		case err == nil:
			*f.data = data
		case !f.optional || !errors.Is(err, os.ErrNotExist):
			return CAFiles{}, fmt.Errorf("read %s: %w", f.file, err)
		}
	}
	return ca, nil
}

// ClusterKeys is the keys Secret's data, nil when there is no Secret (no control plane was ever
// invited).
func ClusterKeys(ctx context.Context, client kubernetes.Interface) (map[string][]byte, error) {
	s, err := client.CoreV1().Secrets(SecretNamespace).Get(ctx, bootstrappolicy.ClusterKeysSecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get the cluster's keys: %w", err)
	}
	return s.Data, nil
}

// CAFilesOf is the CA name in the keys Secret's data; found is false when the data lacks it.
func CAFilesOf(keys map[string][]byte, name, next string) (ca CAFiles, found bool) {
	for _, f := range ca.entries(name, next) {
		*f.data = keys[CASecretKey(f.file)]
	}
	return ca, len(ca.Cert) > 0 && len(ca.Key) > 0
}

// PublishCAFiles replaces the CA name in the keys Secret, for the other control planes to follow;
// it reports false without writing when there is no Secret (no other control plane).
func PublishCAFiles(ctx context.Context, client kubernetes.Interface, name, next string, ca CAFiles) (bool, error) {
	secrets := client.CoreV1().Secrets(SecretNamespace)
	published := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := secrets.Get(ctx, bootstrappolicy.ClusterKeysSecret, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		upd := cur.DeepCopy()
		if upd.Data == nil {
			upd.Data = map[string][]byte{}
		}
		for _, f := range ca.entries(name, next) {
			if len(*f.data) == 0 {
				delete(upd.Data, CASecretKey(f.file))
			} else {
				upd.Data[CASecretKey(f.file)] = *f.data
			}
		}
		_, err = secrets.Update(ctx, upd, metav1.UpdateOptions{})
		published = err == nil
		return err
	})
	if err != nil {
		return false, fmt.Errorf("publish %s in %s/%s: %w", name, SecretNamespace, bootstrappolicy.ClusterKeysSecret, err)
	}
	return published, nil
}

// FetchKeys gets the shared keys for a joining control-plane node: the CA is checked against the
// token's pin first (FetchCA), the keys are read with the token, and the CA among them must be
// the pinned one.
func FetchKeys(ctx context.Context, server string, token JoinToken) (Keys, error) {
	ca, err := FetchCA(ctx, server, token.CAHash)
	if err != nil {
		return Keys{}, err
	}
	client, err := kubernetes.NewForConfig(&rest.Config{
		Host:            server,
		TLSClientConfig: rest.TLSClientConfig{CAData: pemCert(ca)},
		BearerToken:     token.Token.String(),
		UserAgent:       "skiff-join",
	})
	if err != nil {
		return Keys{}, err
	}
	s, err := client.CoreV1().Secrets(SecretNamespace).Get(ctx, bootstrappolicy.ClusterKeysSecret, metav1.GetOptions{})
	switch {
	case apierrors.IsUnauthorized(err):
		return Keys{}, fmt.Errorf("join %s with token %s: %w", server, token.Token.ID, ErrTokenRefused)
	case apierrors.IsForbidden(err):
		return Keys{}, fmt.Errorf("token %s may not join control-plane nodes: make one with skiff token create --control-plane", token.Token.ID)
	case apierrors.IsNotFound(err):
		return Keys{}, fmt.Errorf("the cluster's keys are not uploaded: make the token with skiff token create --control-plane")
	case err != nil:
		return Keys{}, fmt.Errorf("get the cluster's keys: %w", err)
	}
	k := keysFromSecret(s.Data)
	got, err := pki.ParseCertificate(k.CACert)
	if err != nil {
		return Keys{}, fmt.Errorf("cluster keys: CA certificate: %w", err)
	}
	if CAHash(got) != token.CAHash {
		return Keys{}, fmt.Errorf("%w: the uploaded keys carry another CA", ErrCAMismatch)
	}
	if _, err := pki.NewCA(k.CACert, k.CAKey); err != nil {
		return Keys{}, fmt.Errorf("cluster keys: CA key: %w", err)
	}
	if _, err := pki.ParseKey(k.SAKey); err != nil {
		return Keys{}, fmt.Errorf("cluster keys: service-account key: %w", err)
	}
	return k, nil
}

// keysFromSecret reads the keys Secret's data.
func keysFromSecret(data map[string][]byte) Keys {
	k := Keys{CACert: data[keysCACert], CAKey: data[keysCAKey], SAKey: data[keysSAKey]}
	for _, o := range k.optional() {
		*o.data = data[o.secretKey]
	}
	for name, v := range data {
		if isRetiredSAKey(name) {
			if k.RetiredSAKeys == nil {
				k.RetiredSAKeys = map[string][]byte{}
			}
			k.RetiredSAKeys[name] = v
		}
	}
	return k
}

func pemCert(c *x509.Certificate) []byte {
	return pemEncode("CERTIFICATE", c.Raw)
}
