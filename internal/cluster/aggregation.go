package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/pki"
	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/apiregistration"
)

// AggregationOptions are kube-apiserver's aggregation flags: the front-proxy client certificate
// the API server presents to extension API servers, the CA they check it against, and the request
// headers that name the user. Empty files are the ones skiff creates in <data-dir>/pki.
type AggregationOptions struct {
	RequestHeaderClientCAFile string
	ProxyClientCertFile       string
	ProxyClientKeyFile        string
	UsernameHeaders           []string
	GroupHeaders              []string
	ExtraHeadersPrefix        []string
	AllowedNames              []string
}

// aggregationSetup is what the API server needs for aggregation and what the
// extension-apiserver-authentication ConfigMap publishes.
type aggregationSetup struct {
	server        apiserver.AggregationConfig
	frontProxyCA  []byte
	allowedNames  []string
	clusterCAPath string
	// requestHeader authenticates requests a front proxy (this or another API server, with a
	// certificate of the requestheader CA) makes on behalf of the user its headers name.
	requestHeader apiserver.RequestHeaderAuthenticator
	// clusterRoots is the cluster CA bundle as it is on disk (a CA rotation adds and retires CAs
	// in it while the server runs): client certificates of the front-proxy CA must not
	// authenticate as their common name.
	clusterRoots *pki.PoolHolder
}

// newAggregationSetup creates the front-proxy certificates when no files are configured and loads
// the client pair.
func newAggregationSetup(cfg *Config, now time.Time) (*aggregationSetup, error) {
	opts := cfg.Aggregation
	dir := filepath.Join(cfg.DataDir, "pki")
	if opts.RequestHeaderClientCAFile == "" || opts.ProxyClientCertFile == "" {
		files, err := pki.EnsureFrontProxy(dir, now)
		if err != nil {
			return nil, err
		}
		if opts.RequestHeaderClientCAFile == "" {
			opts.RequestHeaderClientCAFile = files.CACert
		}
		if opts.ProxyClientCertFile == "" {
			opts.ProxyClientCertFile, opts.ProxyClientKeyFile = files.ClientCert, files.ClientKey
		}
	}
	caPEM, err := os.ReadFile(opts.RequestHeaderClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("--requestheader-client-ca-file: %w", err)
	}
	// Read at each handshake, so a renewed pair is presented without a restart.
	proxyClient, err := pki.NewKeyPairHolder([]pki.KeyPairFiles{{CertFile: opts.ProxyClientCertFile, KeyFile: opts.ProxyClientKeyFile}})
	if err != nil {
		return nil, fmt.Errorf("--proxy-client-cert-file: %w", err)
	}
	orDefault := func(v []string, def string) []string {
		if len(v) == 0 {
			return []string{def}
		}
		return v
	}
	// Read at each request, so a front-proxy CA rotated in its bundle is followed without a restart.
	frontProxyPool, err := pki.NewPoolHolder(opts.RequestHeaderClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("--requestheader-client-ca-file: %w", err)
	}
	clusterCAPath := filepath.Join(dir, "ca.crt")
	clusterRoots, err := pki.NewPoolHolder(clusterCAPath)
	if err != nil {
		return nil, fmt.Errorf("cluster CA: %w", err)
	}
	setup := &aggregationSetup{
		server: apiserver.AggregationConfig{
			GetProxyClientCert:  proxyClient.GetClientCertificate,
			UsernameHeaders:     orDefault(opts.UsernameHeaders, "X-Remote-User"),
			GroupHeaders:        orDefault(opts.GroupHeaders, "X-Remote-Group"),
			ExtraHeaderPrefixes: orDefault(opts.ExtraHeadersPrefix, "X-Remote-Extra-"),
		},
		frontProxyCA:  caPEM,
		allowedNames:  orDefault(opts.AllowedNames, pki.FrontProxyClientName),
		clusterCAPath: clusterCAPath,
		clusterRoots:  clusterRoots,
	}
	setup.requestHeader = apiserver.RequestHeaderAuthenticator{
		CA: frontProxyPool, AllowedNames: setup.allowedNames,
		UsernameHeaders: setup.server.UsernameHeaders, GroupHeaders: setup.server.GroupHeaders,
		ExtraHeaderPrefixes: setup.server.ExtraHeaderPrefixes,
	}
	return setup, nil
}

// requestHeaderCAFile is the front-proxy CA bundle the API server's TLS layer accepts client
// certificates of, beside the cluster CA (newAggregationSetup has created it by then).
func requestHeaderCAFile(cfg *Config) string {
	if path := cfg.Aggregation.RequestHeaderClientCAFile; path != "" {
		return path
	}
	return filepath.Join(cfg.DataDir, "pki", "front-proxy-ca.crt")
}

// ensureAggregationObjects creates the local APIServices of the served built-in group versions
// and kube-system/extension-apiserver-authentication, which extension API servers read to trust
// the front proxy (kube-apiserver's cluster-authentication-trust-controller keeps the same keys).
func ensureAggregationObjects(ctx context.Context, srv *apiserver.Server, setup *aggregationSetup, resources []*registry.Resource) error {
	var served []schema.GroupVersion
	for _, r := range resources {
		served = append(served, r.GroupVersion)
	}
	cm, err := extensionAuthConfigMap(setup)
	if err != nil {
		return err
	}
	seeds := []apiserver.Seed{{Resource: schema.GroupResource{Resource: "configmaps"}, Object: cm}}
	for _, svc := range apiregistration.LocalAPIServices(served) {
		seeds = append(seeds, apiserver.Seed{Resource: schema.GroupResource{Group: "apiregistration.k8s.io", Resource: "apiservices"}, Object: svc})
	}
	return srv.EnsureObjects(ctx, seeds)
}

// extensionAuthConfigMap is kube-system/extension-apiserver-authentication with upstream's keys:
// the client CA, the requestheader CA and the header names as JSON lists.
func extensionAuthConfigMap(setup *aggregationSetup) (*corev1.ConfigMap, error) {
	clientCA, err := os.ReadFile(setup.clusterCAPath)
	if err != nil {
		return nil, fmt.Errorf("cluster CA: %w", err)
	}
	list := func(v []string) string {
		data, _ := json.Marshal(v)
		return string(data)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "extension-apiserver-authentication", Namespace: "kube-system"},
		Data: map[string]string{
			extensionAuthClientCA:                string(clientCA),
			extensionAuthRequestHeaderCA:         string(setup.frontProxyCA),
			"requestheader-allowed-names":        list(setup.allowedNames),
			"requestheader-username-headers":     list(setup.server.UsernameHeaders),
			"requestheader-group-headers":        list(setup.server.GroupHeaders),
			"requestheader-extra-headers-prefix": list(setup.server.ExtraHeaderPrefixes),
		},
	}, nil
}

// Keys of extension-apiserver-authentication that hold CA bundles.
const (
	extensionAuthClientCA        = "client-ca-file"
	extensionAuthRequestHeaderCA = "requestheader-client-ca-file"
)

// extensionAuthCAUpdate is the ConfigMap data with the CA bundles as the node's files hold them
// now, and whether that changes anything (pure). Only the bundles are the files'; the header
// names stay as the first API server wrote them.
func extensionAuthCAUpdate(cur map[string]string, clientCA, requestHeaderCA []byte) (map[string]string, bool) {
	if cur[extensionAuthClientCA] == string(clientCA) && cur[extensionAuthRequestHeaderCA] == string(requestHeaderCA) {
		return cur, false
	}
	next := make(map[string]string, len(cur)+2)
	for k, v := range cur {
		next[k] = v
	}
	next[extensionAuthClientCA], next[extensionAuthRequestHeaderCA] = string(clientCA), string(requestHeaderCA)
	return next, true
}

// syncExtensionAuthCAs keeps the CA bundles of kube-system/extension-apiserver-authentication equal
// to the node's ca.crt and front-proxy CA file, as kube-apiserver's cluster authentication trust
// controller does: extension API servers read the client and requestheader CAs there, so a CA
// rotation must reach them (ensureAggregationObjects only creates the ConfigMap). It reports
// whether it updated it.
func syncExtensionAuthCAs(ctx context.Context, client kubernetes.Interface, cfg *Config) (bool, error) {
	clientCA, err := os.ReadFile(filepath.Join(cfg.DataDir, "pki", "ca.crt"))
	if err != nil {
		return false, err
	}
	requestHeaderCA, err := os.ReadFile(requestHeaderCAFile(cfg))
	if err != nil {
		return false, err
	}
	cms := client.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	cur, err := cms.Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("extension-apiserver-authentication: %w", err)
	}
	data, changed := extensionAuthCAUpdate(cur.Data, clientCA, requestHeaderCA)
	if !changed {
		return false, nil
	}
	upd := cur.DeepCopy()
	upd.Data = data
	if _, err := cms.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return false, fmt.Errorf("extension-apiserver-authentication: %w", err)
	}
	return true, nil
}
