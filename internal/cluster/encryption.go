package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/identitylease"
	"github.com/skiff-sh/skiff/internal/join"
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

// atRest is a node's encryption at rest: the configuration in force and whether skiff keeps it.
type atRest struct {
	reloader *value.Reloader
	// managed: skiff wrote the configuration (--secrets-encryption without
	// --encryption-provider-config), so the node follows the cluster's copy and takes part in
	// rotations (encryptionsync.go).
	managed bool
	// changed receives after each configuration put in force, so the API server's identity Lease
	// says so at once (a rotation waits on every server's Lease).
	changed chan struct{}
	path    string
}

// EncryptionConfigAnnotation is where each API server's identity Lease names the encryption
// configuration it has in force (sha256 of the file, hex): a rotation moves on once every live
// API server shows the step's configuration.
const EncryptionConfigAnnotation = "skiff.sh/encryption-config-hash"

// encryptionAtRest loads the node's encryption configuration: --encryption-provider-config when
// given, else with --secrets-encryption the one skiff keeps in the data dir, written with a fresh
// key the first time (values written before stay readable: identity reads them). Nil means values
// are stored as the codec writes them. The configuration is followed while ctx lasts, by a
// goroutine of the node's background group (spawn).
func encryptionAtRest(ctx context.Context, cfg *Config, reg prometheus.Registerer, spawn func(func())) (*atRest, error) {
	path := cfg.EncryptionProviderConfig
	managed := false
	if path == "" {
		if !cfg.SecretsEncryption {
			return nil, nil
		}
		managed = true
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
	state := &atRest{managed: managed, changed: make(chan struct{}, 1), path: path}
	reloader, err := value.NewReloader(path, cfg.Logger, func(hash string, err error) {
		if err != nil {
			reloads.WithLabelValues("failure").Inc()
			return
		}
		reloads.WithLabelValues("success").Inc()
		inForce.Reset()
		inForce.WithLabelValues(hash).Set(1)
		select {
		case state.changed <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, err
	}
	state.reloader = reloader
	spawn(func() { reloader.Run(ctx, clock.RealClock{}, encryptionReloadInterval) })
	return state, nil
}

// RotateSecretsEncryption rotates the key of the encryption configuration skiff keeps, across
// every control-plane node, from the node whose data dir is dataDir. The cluster's copy (in the
// keys Secret, which every control plane follows) goes through three configurations, and each
// step waits until every live API server's identity Lease shows it in force:
//  1. prepared: the new key added behind the old one, so every server reads it and none writes
//     with it yet;
//  2. promoted: the new key first, so new writes use it (every server can read them);
//  3. every Secret rewritten (sealed with the new key), then pruned: the old keys dropped.
//
// Reads work throughout. An interrupted rotation keeps every key it added; run it again.
func RotateSecretsEncryption(ctx context.Context, dataDir string, progress func(format string, args ...any)) error {
	cfg := Config{DataDir: dataDir}
	path := cfg.EncryptionConfigPath()
	local, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read the encryption configuration (is --secrets-encryption on for this node?): %w", err)
	}
	if _, err := value.WritingKey(local); err != nil {
		return err
	}
	client, err := adminClient(cfg.AdminKubeconfigPath())
	if err != nil {
		return err
	}
	current, err := clusterEncryptionCopy(ctx, client, filepath.Join(dataDir, "pki"), local)
	if err != nil {
		return err
	}
	publish := func(step string, data []byte) error {
		if err := join.PublishEncryptionConfig(ctx, client, data); err != nil {
			return err
		}
		// This node's file at once; the others copy it within encryptionSyncInterval.
		if err := pki.WriteFileAtomic(path, data, 0o600); err != nil {
			return fmt.Errorf("write the encryption configuration: %w", err)
		}
		n, err := waitForEncryptionConfig(ctx, client, data, clock.RealClock{})
		if err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		progress("%s: in force on %d API servers", step, n)
		return nil
	}
	prepared, keyName, err := value.PrepareSecretbox(current, clock.RealClock{}.Now())
	if err != nil {
		return err
	}
	if err := publish("added key "+keyName+" for reading", prepared); err != nil {
		return err
	}
	promoted, err := value.PromoteSecretbox(prepared, keyName)
	if err != nil {
		return err
	}
	if err := publish("key "+keyName+" writes", promoted); err != nil {
		return err
	}
	n, err := rewriteSecrets(ctx, client)
	if err != nil {
		return fmt.Errorf("rewrite Secrets with the new key (the old key is kept, run the rotation again): %w", err)
	}
	progress("rewrote %d Secrets with key %s", n, keyName)
	pruned, err := value.PruneSecretbox(promoted)
	if err != nil {
		return err
	}
	if err := publish("dropped the old keys", pruned); err != nil {
		return err
	}
	progress("Secrets are sealed with %s only", keyName)
	return nil
}

// clusterEncryptionCopy is the configuration a rotation starts from: the cluster's copy, put
// there from this node's file (with the other shared keys, as `skiff token create
// --control-plane` does) if no control plane has joined yet.
func clusterEncryptionCopy(ctx context.Context, client kubernetes.Interface, pkiDir string, local []byte) ([]byte, error) {
	current, err := join.ClusterEncryptionConfig(ctx, client)
	if err != nil {
		return nil, err
	}
	if current != nil {
		return current, nil
	}
	keys, err := join.ReadKeys(pkiDir)
	if err != nil {
		return nil, err
	}
	if err := join.UploadKeys(ctx, client, keys); err != nil {
		return nil, err
	}
	if err := join.PublishEncryptionConfig(ctx, client, local); err != nil {
		return nil, err
	}
	return local, nil
}

func adminClient(kubeconfig string) (kubernetes.Interface, error) {
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("admin kubeconfig: %w", err)
	}
	return kubernetes.NewForConfig(restCfg)
}

// waitForEncryptionConfig waits until every live API server's identity Lease shows the
// configuration data in force, and says how many there are.
func waitForEncryptionConfig(ctx context.Context, client kubernetes.Interface, data []byte, clk clock.Clock) (int, error) {
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var lagging []string
	for {
		list, err := client.CoordinationV1().Leases(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: identitylease.Label + "=" + identitylease.Value})
		if err == nil {
			var live int
			live, lagging = encryptionLaggards(list.Items, want, clk.Now())
			if live > 0 && len(lagging) == 0 {
				return live, nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("API servers without the new encryption configuration after 2m: %s (a server given --encryption-provider-config does not follow the cluster's copy): %w",
				strings.Join(lagging, ", "), errors.Join(ctx.Err(), err))
		case <-clk.After(time.Second):
		}
	}
}

// encryptionLaggards counts the live API servers (identitylease.Live: the rule `skiff status`
// shows too) and names those whose Lease does not show the configuration hash want. A server gone
// longer is not waited for: it copies the cluster's configuration from a peer when it returns
// (encryptionsync.go).
func encryptionLaggards(leases []coordinationv1.Lease, want string, now time.Time) (live int, lagging []string) {
	for _, l := range leases {
		if !identitylease.Live(&l, now) {
			continue
		}
		live++
		if got := l.Annotations[EncryptionConfigAnnotation]; got != want {
			lagging = append(lagging, l.Labels["kubernetes.io/hostname"])
		}
	}
	slices.Sort(lagging)
	return live, lagging
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
