package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	skiffversion "github.com/skiff-sh/skiff/internal/version"
)

// The version skew policy (docs/user/upgrades.md), Kubernetes' own for the components skiff
// runs, stated over the Kubernetes version every skiff binary reports (internal/version):
//
//   - control planes (API servers, with their etcd members and controllers) are within one minor
//     version of each other: an upgrade goes one minor at a time, control planes first;
//   - a kubelet (a worker) is never newer than any API server, and at most three minors older;
//   - a data dir is never started by a binary older than the one that last wrote it (a minor
//     downgrade: its data may be in a shape the older binary does not know), nor one whose data
//     format is newer than the binary's; a data dir holding an etcd member's data is upgraded one
//     minor at a time, as control planes are.
//
// Patch versions never matter: a patch release changes no stored shape and no API.
const (
	maxControlPlaneSkew = 1
	maxKubeletSkew      = 3
)

// controlPlaneRoleLabel selects the control-plane Nodes (kubeletRoles' kubeadm spelling).
const controlPlaneRoleLabel = "node-role.kubernetes.io/control-plane"

// versionFile is the data dir's record of the binary that last wrote it.
const versionFile = "version.json"

// dataDirRecord is <data-dir>/version.json.
type dataDirRecord struct {
	// KubernetesVersion is the GitVersion of the binary that last started on the data dir.
	KubernetesVersion string `json:"kubernetesVersion"`
	// DataFormat is the data dir's format (internal/version.DataFormat).
	DataFormat int `json:"dataFormat"`
}

// skewSelf is the node being judged: its binary's version and what it is.
type skewSelf struct {
	Version      string
	DataFormat   int
	ControlPlane bool
}

// skewCluster is what the node found before changing anything: its data dir's record and the
// versions of the cluster it joins. Empty fields were not found (a new data dir, one written
// before skiff kept a record, a first node with nobody to ask).
type skewCluster struct {
	DataDir    string
	DataDirRec *dataDirRecord
	// APIServer is the GitVersion the API server the node joins through reported at /version.
	APIServer string
	// ControlPlanes are the other control-plane nodes' versions by node name (their Nodes'
	// kubeletVersion: a control plane's kubelet is its own binary).
	ControlPlanes map[string]string
}

// skewError is a refusal: the two versions and the rule they break.
type skewError struct {
	// Other is what OtherName is (or what last wrote the data dir, when DataDir).
	Self, Other, OtherName, Rule string
	DataDir                      bool
}

func (e *skewError) Error() string {
	is := "is"
	if e.DataDir {
		is = "was last written by"
	}
	return fmt.Sprintf("version skew: this skiff is %s, %s %s %s: %s", e.Self, e.OtherName, is, e.Other, e.Rule)
}

// checkSkew applies the skew policy: nil, or the first rule self breaks against c.
func checkSkew(self skewSelf, c skewCluster) error {
	v, err := utilversion.ParseGeneric(self.Version)
	if err != nil {
		return fmt.Errorf("version skew: this binary's version %q: %w", self.Version, err)
	}
	if err := checkDataDirSkew(self, v, c); err != nil {
		return err
	}
	others := []struct{ name, version string }{}
	if c.APIServer != "" {
		others = append(others, struct{ name, version string }{"the API server", c.APIServer})
	}
	for _, name := range slices.Sorted(maps.Keys(c.ControlPlanes)) {
		others = append(others, struct{ name, version string }{"control plane " + name, c.ControlPlanes[name]})
	}
	for _, o := range others {
		ov, err := utilversion.ParseGeneric(o.version)
		if err != nil {
			return fmt.Errorf("version skew: %s reports version %q: %w", o.name, o.version, err)
		}
		refuse := func(rule string) error {
			return &skewError{Self: self.Version, Other: o.version, OtherName: o.name, Rule: rule}
		}
		if ov.Major() != v.Major() {
			return refuse("a cluster never mixes major versions")
		}
		d := minorDiff(v, ov)
		switch {
		case self.ControlPlane && (d > maxControlPlaneSkew || d < -maxControlPlaneSkew):
			return refuse(fmt.Sprintf("control planes stay within %d minor version of each other: upgrade one minor at a time", maxControlPlaneSkew))
		case !self.ControlPlane && d > 0:
			return refuse("a kubelet is never newer than an API server: upgrade every control plane first")
		case !self.ControlPlane && d < -maxKubeletSkew:
			return refuse(fmt.Sprintf("a kubelet is at most %d minor versions older than the API servers: upgrade this node's binary", maxKubeletSkew))
		}
	}
	return nil
}

// checkDataDirSkew is the data dir's part of the policy.
func checkDataDirSkew(self skewSelf, v *utilversion.Version, c skewCluster) error {
	rec := c.DataDirRec
	if rec == nil {
		return nil
	}
	name := "data dir " + c.DataDir
	if rec.DataFormat > self.DataFormat {
		return &skewError{Self: fmt.Sprintf("%s (data format %d)", self.Version, self.DataFormat),
			Other: fmt.Sprintf("%s (data format %d)", rec.KubernetesVersion, rec.DataFormat), OtherName: name, DataDir: true,
			Rule: "a data dir is never started by a binary that does not know its data format: start it with a binary at least as new; the data dir was left untouched"}
	}
	if rec.KubernetesVersion == "" {
		return nil
	}
	rv, err := utilversion.ParseGeneric(rec.KubernetesVersion)
	if err != nil {
		return fmt.Errorf("version skew: %s records version %q: %w", filepath.Join(c.DataDir, versionFile), rec.KubernetesVersion, err)
	}
	refuse := func(rule string) error {
		return &skewError{Self: self.Version, Other: rec.KubernetesVersion, OtherName: name, Rule: rule, DataDir: true}
	}
	d := minorDiff(v, rv)
	switch {
	case rv.Major() != v.Major():
		return refuse("a data dir never changes major version")
	case d < 0:
		return refuse("a data dir is never downgraded to an older minor version: start it with a binary at least as new; the data dir was left untouched")
	case self.ControlPlane && d > maxControlPlaneSkew:
		return refuse(fmt.Sprintf("a control plane's data dir is upgraded at most %d minor version at a time: start it with each minor release in turn", maxControlPlaneSkew))
	}
	return nil
}

// minorDiff is a's minor version minus b's (majors equal).
func minorDiff(a, b *utilversion.Version) int { return int(a.Minor()) - int(b.Minor()) }

// readDataDirRecord reads <dir>/version.json; a missing file is no record (nil).
func readDataDirRecord(dir string) (*dataDirRecord, error) {
	data, err := os.ReadFile(filepath.Join(dir, versionFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read data dir version: %w", err)
	}
	var rec dataDirRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("data dir version %s: %w", filepath.Join(dir, versionFile), err)
	}
	return &rec, nil
}

// writeDataDirRecord records this binary as the data dir's last writer, keeping the higher data
// format (a binary never lowers it: it only reads formats up to its own).
func writeDataDirRecord(dir string, prev *dataDirRecord) error {
	rec := dataDirRecord{KubernetesVersion: skiffversion.GitVersion, DataFormat: skiffversion.DataFormat}
	if prev != nil && prev.DataFormat > rec.DataFormat {
		rec.DataFormat = prev.DataFormat
	}
	if prev != nil && *prev == rec {
		return nil
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, versionFile+".tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("record data dir version: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, versionFile)); err != nil {
		return fmt.Errorf("record data dir version: %w", err)
	}
	return nil
}

// thisBinary is the node's own side of the policy.
func thisBinary(controlPlane bool) skewSelf {
	return skewSelf{Version: skiffversion.GitVersion, DataFormat: skiffversion.DataFormat, ControlPlane: controlPlane}
}

// checkDataDir applies the data dir's part of the policy before the node touches the data dir,
// and returns the record for recordDataDir.
func checkDataDir(dir string, controlPlane bool) (*dataDirRecord, error) {
	rec, err := readDataDirRecord(dir)
	if err != nil {
		return nil, err
	}
	return rec, checkSkew(thisBinary(controlPlane), skewCluster{DataDir: dir, DataDirRec: rec})
}

// skewAskTimeout bounds how long a starting node tries to learn the cluster's versions. A cluster
// whose API servers are all down must not keep a worker from restarting: past it the node starts
// on its data dir's check alone and says so.
const skewAskTimeout = 30 * time.Second

// clusterVersions asks the API server at restCfg for its version and, where the credentials may
// list Nodes, the control-plane nodes' kubelet versions (all but self).
func clusterVersions(ctx context.Context, restCfg *rest.Config, self string) (apiServer string, controlPlanes map[string]string, err error) {
	cs, err := kubernetes.NewForConfig(rest.CopyConfig(restCfg))
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, skewAskTimeout)
	defer cancel()
	var info string
	for {
		v, verr := cs.Discovery().ServerVersion()
		if verr == nil {
			info = v.GitVersion
			break
		}
		select {
		case <-ctx.Done():
			return "", nil, fmt.Errorf("API server version: %w", verr)
		case <-time.After(time.Second):
		}
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: controlPlaneRoleLabel})
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return info, nil, nil
	}
	if err != nil {
		return info, nil, fmt.Errorf("list control-plane nodes: %w", err)
	}
	controlPlanes = map[string]string{}
	for _, n := range nodes.Items {
		if n.Name != self && n.Status.NodeInfo.KubeletVersion != "" {
			controlPlanes[n.Name] = n.Status.NodeInfo.KubeletVersion
		}
	}
	return info, controlPlanes, nil
}

// checkClusterSkew is the check at join and rejoin: the data dir's record and the cluster's
// versions, asked through restCfg. An unreachable cluster is logged and leaves the data dir's
// check alone in force.
func checkClusterSkew(ctx context.Context, dir string, restCfg *rest.Config, node string, controlPlane bool, log *slog.Logger) (*dataDirRecord, error) {
	rec, err := readDataDirRecord(dir)
	if err != nil {
		return nil, err
	}
	c := skewCluster{DataDir: dir, DataDirRec: rec}
	// The data dir first: a too-new one is refused without waiting for the cluster.
	if err := checkSkew(thisBinary(controlPlane), c); err != nil {
		return nil, err
	}
	c.APIServer, c.ControlPlanes, err = clusterVersions(ctx, restCfg, node)
	if err != nil {
		log.Warn("version skew: the cluster's versions could not be read; only the data dir's record was checked", "node", node, "server", restCfg.Host, "err", err)
	}
	if err := checkSkew(thisBinary(controlPlane), c); err != nil {
		return nil, err
	}
	log.Info("version skew within policy", "node", node, "version", skiffversion.GitVersion, "apiServer", c.APIServer, "controlPlanes", c.ControlPlanes)
	return rec, nil
}

// controlPlaneJoinCredentials are how a joining or rejoining control plane asks the cluster's
// versions: its admin kubeconfig once it has one, else the control-plane join token against the
// cluster CA the join stored after checking the token's pin.
func controlPlaneJoinCredentials(cfg *Config) (*rest.Config, error) {
	if restCfg, err := adminAt(cfg); err == nil {
		return restCfg, nil
	}
	if cfg.Token == "" {
		return nil, errors.New("neither an admin kubeconfig nor --token")
	}
	return tokenRESTConfig(cfg, "skiff-version-skew") // etcdnode.go
}

// checkControlPlaneJoinSkew is joinControlPlane's check, once the node trusts the cluster's CA.
func checkControlPlaneJoinSkew(ctx context.Context, cfg *Config) error {
	creds, err := controlPlaneJoinCredentials(cfg)
	if err != nil {
		// Nothing to ask with: the data dir's record is still checked, here and in Start.
		_, err := checkDataDir(cfg.DataDir, true)
		return err
	}
	_, err = checkClusterSkew(ctx, cfg.DataDir, creds, cfg.NodeName, true, cfg.Logger)
	return err
}
