package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/pki"
	"github.com/skiff-sh/skiff/internal/storage/value"
)

// EncryptionConfigPath is where skiff keeps the encryption configuration it writes for
// --secrets-encryption, beside the cluster's other keys.
func (c *Config) EncryptionConfigPath() string {
	return filepath.Join(c.DataDir, "pki", "encryption-config.yaml")
}

// encryptionReloadInterval is how often an API server looks for a changed encryption
// configuration (a key rotation waits for every server to have reloaded).
const encryptionReloadInterval = 2 * time.Second

// encryptionAtRest loads the node's encryption configuration: --encryption-provider-config when
// given, else with --secrets-encryption the one skiff keeps in the data dir, written with a fresh
// key the first time (values written before stay readable: identity reads them). Nil means values
// are stored as the codec writes them. The configuration is followed while ctx lasts.
func encryptionAtRest(ctx context.Context, cfg *Config, reg prometheus.Registerer) (*value.Reloader, error) {
	path := cfg.EncryptionProviderConfig
	if path == "" {
		if !cfg.SecretsEncryption {
			return nil, nil
		}
		path = cfg.EncryptionConfigPath()
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			data, err := value.NewSecretboxConfig(clock.RealClock{}.Now())
			if err != nil {
				return nil, fmt.Errorf("secrets encryption key: %w", err)
			}
			if err := pki.WriteFileAtomic(path, data, 0o600); err != nil {
				return nil, fmt.Errorf("write encryption configuration: %w", err)
			}
			cfg.Logger.Info("secrets encryption on with a new key", "config", path)
		}
	}
	reloads := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_encryption_config_controller_automatic_reloads_total",
		Help: "Reloads of the encryption configuration, by status (success, failure).",
	}, []string{"status"})
	inForce := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "skiff_encryption_config_info",
		Help: "1 for the hash (sha256) of the encryption configuration this API server has in force.",
	}, []string{"hash"})
	if err := errors.Join(reg.Register(reloads), reg.Register(inForce)); err != nil {
		return nil, fmt.Errorf("encryption metrics: %w", err)
	}
	reloader, err := value.NewReloader(path, cfg.Logger, func(hash string, err error) {
		if err != nil {
			reloads.WithLabelValues("failure").Inc()
			return
		}
		reloads.WithLabelValues("success").Inc()
		inForce.Reset()
		inForce.WithLabelValues(hash).Set(1)
	})
	if err != nil {
		return nil, err
	}
	go reloader.Run(ctx, clock.RealClock{}, encryptionReloadInterval)
	return reloader, nil
}

// RotateSecretsEncryption rotates the key of the encryption configuration skiff keeps in dataDir,
// against the node running there: a new key is put first (the old ones still read) and the API
// server reloads it; every Secret is rewritten, so it is sealed with the new key; then the old
// keys are dropped and the server reloads again. Reads work throughout. On a cluster with several
// control-plane nodes every node's configuration must carry the new key before the rewrite: run it
// where the others get their configuration from, and copy the file (see README).
func RotateSecretsEncryption(ctx context.Context, dataDir string, progress func(format string, args ...any)) error {
	cfg := Config{DataDir: dataDir}
	path := cfg.EncryptionConfigPath()
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read the encryption configuration (is --secrets-encryption on for this node?): %w", err)
	}
	client, err := adminClient(cfg.AdminKubeconfigPath())
	if err != nil {
		return err
	}
	rotated, keyName, err := value.RotateSecretbox(data, clock.RealClock{}.Now())
	if err != nil {
		return err
	}
	if err := pki.WriteFileAtomic(path, rotated, 0o600); err != nil {
		return fmt.Errorf("write the encryption configuration: %w", err)
	}
	progress("added key %s; waiting for the API server to load it", keyName)
	if err := waitForEncryptionConfig(ctx, client, rotated); err != nil {
		return err
	}
	n, err := rewriteSecrets(ctx, client)
	if err != nil {
		return fmt.Errorf("rewrite Secrets with the new key (the old key is kept, run the rotation again): %w", err)
	}
	progress("rewrote %d Secrets with key %s", n, keyName)
	pruned, err := value.PruneSecretbox(rotated)
	if err != nil {
		return err
	}
	if err := pki.WriteFileAtomic(path, pruned, 0o600); err != nil {
		return fmt.Errorf("write the encryption configuration: %w", err)
	}
	if err := waitForEncryptionConfig(ctx, client, pruned); err != nil {
		return err
	}
	progress("dropped the old keys; Secrets are sealed with %s only", keyName)
	return nil
}

func adminClient(kubeconfig string) (kubernetes.Interface, error) {
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("admin kubeconfig: %w", err)
	}
	return kubernetes.NewForConfig(restCfg)
}

// waitForEncryptionConfig waits until the API server reports (on /metrics) that it has the
// configuration data in force.
func waitForEncryptionConfig(ctx context.Context, client kubernetes.Interface, data []byte) error {
	sum := sha256.Sum256(data)
	want := `skiff_encryption_config_info{hash="` + hex.EncodeToString(sum[:]) + `"} 1`
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		body, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err == nil && bytes.Contains(body, []byte(want)) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the API server did not load the new encryption configuration: %w", errors.Join(ctx.Err(), err))
		case <-time.After(encryptionReloadInterval / 2):
		}
	}
}

// rewriteSecrets writes every Secret back unchanged: the store seals a value read with an older
// key with the current one.
func rewriteSecrets(ctx context.Context, client kubernetes.Interface) (int, error) {
	n := 0
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := client.CoreV1().Secrets("").List(ctx, opts)
		if err != nil {
			return n, err
		}
		for i := range list.Items {
			secret := &list.Items[i]
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				_, err := client.CoreV1().Secrets(secret.Namespace).Update(ctx, secret, metav1.UpdateOptions{})
				if apierrors.IsConflict(err) {
					fresh, getErr := client.CoreV1().Secrets(secret.Namespace).Get(ctx, secret.Name, metav1.GetOptions{})
					if getErr != nil {
						return getErr
					}
					secret = fresh
				}
				return err
			})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return n, fmt.Errorf("secret %s/%s: %w", secret.Namespace, secret.Name, err)
			default:
				n++
			}
		}
		if list.Continue == "" {
			return n, nil
		}
		opts.Continue = list.Continue
	}
}
