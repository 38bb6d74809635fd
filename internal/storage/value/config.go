package value

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// EncryptionConfiguration is Kubernetes' apiserver.config.k8s.io/v1 EncryptionConfiguration, the
// file --encryption-provider-config names.
type EncryptionConfiguration struct {
	Kind       string                  `json:"kind"`
	APIVersion string                  `json:"apiVersion"`
	Resources  []ResourceConfiguration `json:"resources"`
}

// ResourceConfiguration is the providers for a set of resources ("secrets", "deployments.apps",
// "*.apps", "*.*"), the first writing.
type ResourceConfiguration struct {
	Resources []string                `json:"resources"`
	Providers []ProviderConfiguration `json:"providers"`
}

// ProviderConfiguration names exactly one provider.
type ProviderConfiguration struct {
	AESGCM    *KeysConfiguration `json:"aesgcm,omitempty"`
	AESCBC    *KeysConfiguration `json:"aescbc,omitempty"`
	Secretbox *KeysConfiguration `json:"secretbox,omitempty"`
	Identity  *struct{}          `json:"identity,omitempty"`
	KMS       json.RawMessage    `json:"kms,omitempty"`
}

// KeysConfiguration lists a provider's keys, the first writing.
type KeysConfiguration struct {
	Keys []Key `json:"keys"`
}

// Key is a named key, base64-encoded.
type Key struct {
	Name   string `json:"name"`
	Secret string `json:"secret"`
}

// Config is a loaded EncryptionConfiguration: the transformer of each resource.
type Config struct {
	entries []configEntry
	// Hash identifies the file's content (sha256, hex), for the metric that says which one a
	// server has loaded.
	Hash string
}

type configEntry struct {
	resources   []string
	transformer Transformer
}

// LoadFile reads and validates an EncryptionConfiguration file.
func LoadFile(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("encryption configuration: %w", err)
	}
	cfg, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("encryption configuration %s: %w", path, err)
	}
	return cfg, nil
}

// Parse validates an EncryptionConfiguration and builds its transformers.
func Parse(data []byte) (*Config, error) {
	var ec EncryptionConfiguration
	if err := yaml.UnmarshalStrict(data, &ec); err != nil {
		return nil, err
	}
	if ec.Kind != "EncryptionConfiguration" || ec.APIVersion != "apiserver.config.k8s.io/v1" {
		return nil, fmt.Errorf("kind %q, apiVersion %q: want EncryptionConfiguration, apiserver.config.k8s.io/v1", ec.Kind, ec.APIVersion)
	}
	if len(ec.Resources) == 0 {
		return nil, errors.New("resources: at least one entry is required")
	}
	sum := sha256.Sum256(data)
	cfg := &Config{Hash: hex.EncodeToString(sum[:])}
	for i, rc := range ec.Resources {
		if len(rc.Resources) == 0 {
			return nil, fmt.Errorf("resources[%d].resources: at least one resource is required", i)
		}
		t, err := buildProviders(rc.Providers)
		if err != nil {
			return nil, fmt.Errorf("resources[%d].providers%w", i, err)
		}
		cfg.entries = append(cfg.entries, configEntry{resources: rc.Resources, transformer: t})
	}
	return cfg, nil
}

func buildProviders(providers []ProviderConfiguration) (*Prefixes, error) {
	if len(providers) == 0 {
		return nil, errors.New(": at least one provider is required")
	}
	p := &Prefixes{}
	names := map[string]bool{}
	for i, pc := range providers {
		kinds := 0
		for _, set := range []bool{pc.AESGCM != nil, pc.AESCBC != nil, pc.Secretbox != nil, pc.Identity != nil, pc.KMS != nil} {
			if set {
				kinds++
			}
		}
		if kinds != 1 {
			return nil, fmt.Errorf("[%d]: exactly one of aesgcm, aescbc, secretbox, identity, kms is required", i)
		}
		switch {
		case pc.Identity != nil:
			p.identity = true
			if i == 0 {
				p.writeIdentity = true
			}
		case pc.KMS != nil:
			return nil, fmt.Errorf("[%d].kms: KMS providers are not supported by skiff; use aesgcm, aescbc or secretbox", i)
		default:
			kind, keys, build := "aesgcm", pc.AESGCM, newAESGCM
			if pc.AESCBC != nil {
				kind, keys, build = "aescbc", pc.AESCBC, newAESCBC
			} else if pc.Secretbox != nil {
				kind, keys, build = "secretbox", pc.Secretbox, newSecretBox
			}
			if len(keys.Keys) == 0 {
				return nil, fmt.Errorf("[%d].%s.keys: at least one key is required", i, kind)
			}
			for j, k := range keys.Keys {
				field := fmt.Sprintf("[%d].%s.keys[%d]", i, kind, j)
				if k.Name == "" || strings.Contains(k.Name, ":") {
					return nil, fmt.Errorf("%s.name: a non-empty name without ':' is required", field)
				}
				if names[kind+"/"+k.Name] {
					return nil, fmt.Errorf("%s.name: %q is used twice", field, k.Name)
				}
				names[kind+"/"+k.Name] = true
				secret, err := base64.StdEncoding.DecodeString(k.Secret)
				if err != nil {
					return nil, fmt.Errorf("%s.secret: not base64: %w", field, err)
				}
				t, err := build(secret)
				if err != nil {
					return nil, fmt.Errorf("%s.secret: %w", field, err)
				}
				p.list = append(p.list, prefixed{prefix: []byte("k8s:enc:" + kind + ":v1:" + k.Name + ":"), transformer: t})
			}
		}
	}
	return p, nil
}

// For returns the transformer of a resource (group "" for the core group), or nil when the
// configuration leaves it in clear. The first entry that names the resource wins, as in
// Kubernetes.
func (c *Config) For(group, resource string) Transformer {
	if c == nil {
		return nil
	}
	for _, e := range c.entries {
		for _, r := range e.resources {
			if matches(r, group, resource) {
				return e.transformer
			}
		}
	}
	return nil
}

// matches reports whether a configured resource name covers group/resource: "secrets" is core
// secrets, "deployments.apps" one resource of a group, "*.apps" every resource of a group, "*."
// every core resource and "*.*" every resource.
func matches(pattern, group, resource string) bool {
	name, patternGroup, _ := strings.Cut(pattern, ".")
	switch {
	case pattern == "*.*":
		return true
	case name == "*":
		return patternGroup == group
	default:
		return name == resource && patternGroup == group
	}
}

// NewSecretboxConfig is the configuration skiff writes for a new cluster: Secrets sealed with a
// fresh secretbox key, and values written before encryption was on still readable (identity
// last).
func NewSecretboxConfig(now time.Time) ([]byte, error) {
	key, err := newKey(now)
	if err != nil {
		return nil, err
	}
	return marshal([]Key{key})
}

// PrepareSecretbox adds a new key behind a skiff-written configuration's keys: every server that
// loads it can read what the new key seals, while the writing key stays the same. The first step
// of a rotation across several API servers: none writes with the new key before all can read it.
func PrepareSecretbox(data []byte, now time.Time) ([]byte, string, error) {
	keys, err := secretboxKeys(data)
	if err != nil {
		return nil, "", err
	}
	key, err := newKey(now)
	if err != nil {
		return nil, "", err
	}
	out, err := marshal(append(keys, key))
	return out, key.Name, err
}

// PromoteSecretbox makes the named key of a skiff-written configuration the writing one; the
// others still read.
func PromoteSecretbox(data []byte, name string) ([]byte, error) {
	keys, err := secretboxKeys(data)
	if err != nil {
		return nil, err
	}
	for i, k := range keys {
		if k.Name == name {
			ordered := append([]Key{k}, keys[:i]...)
			return marshal(append(ordered, keys[i+1:]...))
		}
	}
	return nil, fmt.Errorf("the encryption configuration has no key %s", name)
}

// WritingKey names the key a skiff-written configuration seals new values with.
func WritingKey(data []byte) (string, error) {
	keys, err := secretboxKeys(data)
	if err != nil {
		return "", err
	}
	return keys[0].Name, nil
}

// PruneSecretbox keeps only the writing key of a skiff-written configuration, once every value
// has been rewritten with it.
func PruneSecretbox(data []byte) ([]byte, error) {
	keys, err := secretboxKeys(data)
	if err != nil {
		return nil, err
	}
	return marshal(keys[:1])
}

// secretboxKeys reads the keys of a configuration in the shape NewSecretboxConfig writes; other
// shapes are the operator's to rotate, as with kube-apiserver.
func secretboxKeys(data []byte) ([]Key, error) {
	var ec EncryptionConfiguration
	if err := yaml.UnmarshalStrict(data, &ec); err != nil {
		return nil, err
	}
	if len(ec.Resources) != 1 || len(ec.Resources[0].Providers) != 2 || ec.Resources[0].Providers[0].Secretbox == nil ||
		len(ec.Resources[0].Providers[0].Secretbox.Keys) == 0 || ec.Resources[0].Providers[1].Identity == nil {
		return nil, errors.New("not a configuration skiff wrote (one secretbox provider, then identity): rotate its keys by hand")
	}
	return ec.Resources[0].Providers[0].Secretbox.Keys, nil
}

func newKey(now time.Time) (Key, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return Key{}, err
	}
	suffix := make([]byte, 3)
	if _, err := rand.Read(suffix); err != nil {
		return Key{}, err
	}
	// The time says how old a key is; the random part keeps two rotations in one second apart.
	name := "key-" + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(suffix)
	return Key{Name: name, Secret: base64.StdEncoding.EncodeToString(secret)}, nil
}

func marshal(keys []Key) ([]byte, error) {
	return yaml.Marshal(EncryptionConfiguration{
		Kind: "EncryptionConfiguration", APIVersion: "apiserver.config.k8s.io/v1",
		Resources: []ResourceConfiguration{{
			Resources: []string{"secrets"},
			Providers: []ProviderConfiguration{{Secretbox: &KeysConfiguration{Keys: keys}}, {Identity: &struct{}{}}},
		}},
	})
}
