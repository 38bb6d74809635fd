package etcd

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"time"
)

// Cluster states as etcd's --initial-cluster-state spells them.
const (
	ClusterStateNew      = "new"
	ClusterStateExisting = "existing"
)

// Defaults for an unconfigured single-node member.
const (
	DefaultName                        = "default"
	DefaultClientURL                   = "http://127.0.0.1:2379"
	DefaultPeerURL                     = "http://127.0.0.1:2380"
	DefaultInitialClusterToken         = "skiff-etcd"
	DefaultReadyTimeout                = 60 * time.Second
	DefaultWatchProgressNotifyInterval = 5 * time.Second
	DefaultQuotaBackendBytes           = 2 << 30 // 2 GiB, etcd's own default
	DefaultLogLevel                    = "warn"
)

// TLSFiles names the PEM files of one side (client or peer) of an etcd member. An empty CertFile
// means plain HTTP on that side.
type TLSFiles struct {
	CertFile      string
	KeyFile       string
	TrustedCAFile string
	// ClientCertAuth requires connecting clients (or peers) to present a certificate signed by TrustedCAFile.
	ClientCertAuth bool
}

// Enabled reports whether TLS is configured.
func (t TLSFiles) Enabled() bool { return t.CertFile != "" }

// Config describes one etcd member. URLs are lists because a member may listen on several
// addresses; InitialCluster is etcd's "name=peerURL,..." list.
type Config struct {
	Name    string
	DataDir string

	ListenClientURLs    []string
	AdvertiseClientURLs []string
	ListenPeerURLs      []string
	AdvertisePeerURLs   []string
	// ListenClientHTTPURLs serve etcd's HTTP endpoints (/health, /metrics, /version), so that the
	// client URLs serve gRPC alone on grpc-go's own server: where they also serve HTTP, etcd hands
	// gRPC to net/http's HTTP/2 server through a handler, a slower path for every request (measured:
	// 12-17 % more server CPU per API create). Empty: one loopback URL on a port the system picks.
	ListenClientHTTPURLs []string

	// InitialCluster lists every member at bootstrap ("a=http://10.0.0.1:2380,b=..."). Empty means a
	// single-member cluster made of this member's advertised peer URLs.
	InitialCluster      string
	InitialClusterToken string
	// ClusterState is ClusterStateNew to bootstrap a cluster, ClusterStateExisting to join one
	// (after the member was added with the member API).
	ClusterState string

	ClientTLS TLSFiles
	PeerTLS   TLSFiles

	// WatchProgressNotifyInterval is how often idle watches requesting progress notifications get one.
	WatchProgressNotifyInterval time.Duration
	// QuotaBackendBytes caps the database size.
	QuotaBackendBytes int64
	// ReadyTimeout bounds how long Start waits for the member to join the cluster and serve.
	ReadyTimeout time.Duration
	// LogLevel is the zap level of etcd's own logs ("debug", "info", "warn", "error").
	LogLevel string
	// Logger, when set, receives etcd's logs (as component=etcd) instead of etcd's own JSON on
	// stderr.
	Logger *slog.Logger
}

// Default fills unset fields with the values of a single-node member on loopback.
func (c *Config) Default() {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if len(c.ListenClientURLs) == 0 {
		c.ListenClientURLs = []string{DefaultClientURL}
	}
	if len(c.AdvertiseClientURLs) == 0 {
		c.AdvertiseClientURLs = append([]string(nil), c.ListenClientURLs...)
	}
	if len(c.ListenPeerURLs) == 0 {
		c.ListenPeerURLs = []string{DefaultPeerURL}
	}
	if len(c.AdvertisePeerURLs) == 0 {
		c.AdvertisePeerURLs = append([]string(nil), c.ListenPeerURLs...)
	}
	if c.InitialCluster == "" {
		parts := make([]string, 0, len(c.AdvertisePeerURLs))
		for _, u := range c.AdvertisePeerURLs {
			parts = append(parts, c.Name+"="+u)
		}
		c.InitialCluster = strings.Join(parts, ",")
	}
	if c.InitialClusterToken == "" {
		c.InitialClusterToken = DefaultInitialClusterToken
	}
	if c.ClusterState == "" {
		c.ClusterState = ClusterStateNew
	}
	if c.WatchProgressNotifyInterval == 0 {
		c.WatchProgressNotifyInterval = DefaultWatchProgressNotifyInterval
	}
	if c.QuotaBackendBytes == 0 {
		c.QuotaBackendBytes = DefaultQuotaBackendBytes
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = DefaultReadyTimeout
	}
	if c.LogLevel == "" {
		c.LogLevel = DefaultLogLevel
	}
}

// Validate reports every problem of a defaulted config at once.
func (c *Config) Validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("name must not be empty"))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data dir must not be empty"))
	} else if !filepath.IsAbs(c.DataDir) {
		errs = append(errs, fmt.Errorf("data dir %q must be an absolute path", c.DataDir))
	}
	errs = append(errs, validateURLs("listen client URLs", c.ListenClientURLs, c.ClientTLS)...)
	errs = append(errs, validateURLs("advertise client URLs", c.AdvertiseClientURLs, c.ClientTLS)...)
	if len(c.ListenClientHTTPURLs) > 0 {
		errs = append(errs, validateURLs("listen client HTTP URLs", c.ListenClientHTTPURLs, c.ClientTLS)...)
	}
	errs = append(errs, validateURLs("listen peer URLs", c.ListenPeerURLs, c.PeerTLS)...)
	errs = append(errs, validateURLs("advertise peer URLs", c.AdvertisePeerURLs, c.PeerTLS)...)
	switch c.ClusterState {
	case ClusterStateNew, ClusterStateExisting:
	default:
		errs = append(errs, fmt.Errorf("cluster state %q must be %q or %q", c.ClusterState, ClusterStateNew, ClusterStateExisting))
	}
	if err := validateInitialCluster(c.InitialCluster, c.Name); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, validateTLS("client", c.ClientTLS)...)
	errs = append(errs, validateTLS("peer", c.PeerTLS)...)
	if c.WatchProgressNotifyInterval < 0 {
		errs = append(errs, errors.New("watch progress notify interval must not be negative"))
	}
	if c.ReadyTimeout <= 0 {
		errs = append(errs, errors.New("ready timeout must be positive"))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log level %q must be debug, info, warn or error", c.LogLevel))
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid etcd config: %w", errors.Join(errs...))
	}
	return nil
}

func validateURLs(what string, urls []string, tlsFiles TLSFiles) []error {
	if len(urls) == 0 {
		return []error{fmt.Errorf("%s must not be empty", what)}
	}
	var errs []error
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q: %w", what, raw, err))
			continue
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			errs = append(errs, fmt.Errorf("%s: %q must use http or https", what, raw))
			continue
		}
		if u.Port() == "" {
			errs = append(errs, fmt.Errorf("%s: %q must name a port", what, raw))
		}
		if u.Scheme == "https" && !tlsFiles.Enabled() {
			errs = append(errs, fmt.Errorf("%s: %q uses https but no certificate is configured", what, raw))
		}
	}
	return errs
}

func validateInitialCluster(initialCluster, name string) error {
	if initialCluster == "" {
		return errors.New("initial cluster must not be empty")
	}
	found := false
	for _, member := range strings.Split(initialCluster, ",") {
		memberName, peerURL, ok := strings.Cut(member, "=")
		if !ok || memberName == "" || peerURL == "" {
			return fmt.Errorf("initial cluster entry %q must be name=peerURL", member)
		}
		if _, err := url.Parse(peerURL); err != nil {
			return fmt.Errorf("initial cluster entry %q: %w", member, err)
		}
		if memberName == name {
			found = true
		}
	}
	if !found {
		return fmt.Errorf("initial cluster %q does not list this member %q", initialCluster, name)
	}
	return nil
}

func validateTLS(side string, t TLSFiles) []error {
	var errs []error
	if t.CertFile != "" && t.KeyFile == "" {
		errs = append(errs, fmt.Errorf("%s TLS: key file is required with a cert file", side))
	}
	if t.CertFile == "" && (t.KeyFile != "" || t.TrustedCAFile != "" || t.ClientCertAuth) {
		errs = append(errs, fmt.Errorf("%s TLS: cert file is required when any TLS option is set", side))
	}
	if t.ClientCertAuth && t.TrustedCAFile == "" {
		errs = append(errs, fmt.Errorf("%s TLS: client cert auth needs a trusted CA file", side))
	}
	return errs
}

func parseURLs(raw []string) ([]url.URL, error) {
	out := make([]url.URL, 0, len(raw))
	for _, r := range raw {
		u, err := url.Parse(r)
		if err != nil {
			return nil, fmt.Errorf("parse URL %q: %w", r, err)
		}
		out = append(out, *u)
	}
	return out, nil
}
