package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/etcdapi"
	"github.com/skiff-sh/skiff/internal/nodeadmin"
	"github.com/skiff-sh/skiff/internal/pki"
)

// TestEmbeddedEtcdIsMutualTLSOnly: the node's etcd answers neither plain HTTP nor a TLS client
// without a certificate, on its client and peer ports; the API server's client certificate works.
func TestEmbeddedEtcdIsMutualTLSOnly(t *testing.T) {
	httpPort := freePort(t)
	c := newCluster(t, "--etcd-http-port", strconv.Itoa(httpPort))
	pkiDir := filepath.Join(c.dataDir, "pki")
	caPEM, err := os.ReadFile(filepath.Join(pkiDir, "etcd", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	clientCert, err := tls.LoadX509KeyPair(filepath.Join(pkiDir, "apiserver-etcd-client.crt"), filepath.Join(pkiDir, "apiserver-etcd-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	get := func(url string, tlsCfg *tls.Config) (int, error) {
		hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
		resp, err := hc.Get(url)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	// Client port (gRPC alone), peer port and the HTTP endpoints' port: nothing without TLS and a
	// client certificate of the etcd CA.
	for _, port := range []int{c.ports[1], c.ports[2], httpPort} {
		host := fmt.Sprintf("127.0.0.1:%d", port)
		if code, err := get("http://"+host+"/health", nil); err == nil && code == http.StatusOK {
			t.Errorf("plain http on %s answered 200", host)
		}
		if _, err := get("https://"+host+"/health", &tls.Config{RootCAs: pool}); err == nil {
			t.Errorf("a TLS client without a certificate was served on %s", host)
		}
	}
	code, err := get(fmt.Sprintf("https://127.0.0.1:%d/health", httpPort), &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientCert}})
	if err != nil || code != http.StatusOK {
		t.Fatalf("etcd /health on --etcd-http-port with the API server's client certificate = %d, %v", code, err)
	}
	// The client port serves gRPC on grpc-go's own server, not HTTP.
	if code, err := get(fmt.Sprintf("https://127.0.0.1:%d/health", c.ports[1]), &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientCert}}); err == nil && code == http.StatusOK {
		t.Errorf("the client port answered HTTP /health: it should serve gRPC alone")
	}
	// The tools that read the data dir's etcd-endpoints reach the TLS member.
	if out, err := exec.Command(c.bin, "etcd", "snapshot", "save", "--data-dir", c.dataDir, filepath.Join(t.TempDir(), "snap.db")).CombinedOutput(); err != nil {
		t.Fatalf("snapshot save: %v\n%s", err, out)
	}
}

// extraMember is an etcd member the test runs in-process and joins to the node's cluster through
// the API server's membership endpoints, with certificates from the node's etcd CA.
type extraMember struct {
	name string
	cfg  etcd.Config
	m    *etcd.Member
}

func newExtraMember(t *testing.T, c *cluster, name string) *extraMember {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.LoadOrCreateCA(filepath.Join(c.dataDir, "pki", "etcd"), "ca", "etcd-ca", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.EnsureLeaf(dir, "member", pki.Leaf{CommonName: name, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true, Client: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	files := etcd.TLSFiles{CertFile: cert, KeyFile: key, TrustedCAFile: filepath.Join(c.dataDir, "pki", "etcd", "ca.crt"), ClientCertAuth: true}
	client, peer := fmt.Sprintf("https://127.0.0.1:%d", freePort(t)), fmt.Sprintf("https://127.0.0.1:%d", freePort(t))
	return &extraMember{name: name, cfg: etcd.Config{
		Name: name, DataDir: filepath.Join(dir, "etcd"),
		ListenClientURLs: []string{client}, ListenPeerURLs: []string{peer},
		ClientTLS: files, PeerTLS: files, ReadyTimeout: time.Minute, LogLevel: "error",
		Logger: slog.New(slog.DiscardHandler),
	}}
}

func (e *extraMember) start(t *testing.T) {
	t.Helper()
	m, err := etcd.Start(context.Background(), e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	t.Cleanup(m.Stop)
	select {
	case <-m.Ready():
	case <-m.Failed():
		t.Fatalf("member %s: %v", e.name, m.Err())
	}
}

func (c *cluster) status(t *testing.T) nodeadmin.Report {
	t.Helper()
	out, err := exec.Command(c.bin, "status", "-o", "json", "--data-dir", c.dataDir).Output()
	if err != nil {
		t.Fatalf("skiff status: %v", err)
	}
	var r nodeadmin.Report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("skiff status -o json: %v\n%s", err, out)
	}
	return r
}

func readyzVerbose(c *cluster) (int, string, error) {
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback health probe
	resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz?verbose", c.ports[0]))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

// TestEtcdMembershipQuorumStatusAndNodeRemove grows the node's etcd to three members through the
// API (learners, then promoted), stops two: writes fail with a 503 naming the lost quorum and
// /readyz?verbose says why; one comes back: writes work again by themselves. skiff status shows the
// members, and skiff node remove removes a dead one with its Node.
func TestEtcdMembershipQuorumStatusAndNodeRemove(t *testing.T) {
	c := newCluster(t)
	restCfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	api, err := etcdapi.NewClient(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	r := c.status(t)
	if r.Etcd == nil || len(r.Etcd.Members) != 1 || !r.Etcd.Quorum || !r.Etcd.Members[0].IsLeader || r.Etcd.Members[0].RaftIndex == 0 {
		t.Fatalf("status before: %+v (etcd error %q)", r.Etcd, r.EtcdError)
	}
	if r.ServerVersion == "" || len(r.Leaders) != 2 {
		t.Fatalf("status lacks version or leaders: %+v", r)
	}
	text, err := exec.Command(c.bin, "status", "--data-dir", c.dataDir).CombinedOutput()
	if err != nil || !strings.Contains(string(text), "ETCD (1 members, quorum)") {
		t.Fatalf("skiff status: %v\n%s", err, text)
	}

	extras := []*extraMember{newExtraMember(t, c, "extra-1"), newExtraMember(t, c, "extra-2")}
	for _, e := range extras {
		added, err := api.AddLearner(ctx, etcdapi.AddMemberRequest{Name: e.name, PeerURLs: e.cfg.ListenPeerURLs})
		if err != nil {
			t.Fatal(err)
		}
		e.cfg.InitialCluster, e.cfg.ClusterState = added.InitialCluster, etcd.ClusterStateExisting
		e.start(t)
		if _, err := api.Promote(ctx, added.Member.ID); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, time.Minute, func() error {
		r := c.status(t)
		if r.Etcd == nil || len(r.Etcd.Members) != 3 || !r.Etcd.Quorum {
			return fmt.Errorf("want 3 members with quorum: %+v %s", r.Etcd, r.EtcdError)
		}
		for _, m := range r.Etcd.Members {
			if m.IsLearner || !m.Healthy {
				return fmt.Errorf("member %s not a healthy voter: %+v", m.Name, m)
			}
		}
		return nil
	})
	// A non-admin may not touch membership: RBAC non-resource URLs.
	if out, err := c.kubectlErr("get", "--raw", etcdapi.MembersPath, "--as", "someone"); err == nil || !strings.Contains(out+err.Error(), "forbidden") {
		t.Fatalf("impersonated non-admin listed etcd members: %v\n%s", err, out)
	}

	// Quorum lost.
	c.kubectl("create", "configmap", "before-loss")
	// A writer records every acknowledged write across the loss and the recovery.
	writes := startWriteRecorder(t, "quorum", c)
	writes.waitForMore(t, 3, time.Minute)
	lost := time.Now()
	extras[0].m.Stop()
	extras[1].m.Stop()
	eventually(t, time.Minute, func() error {
		code, body, err := readyzVerbose(c)
		if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, "etcd quorum lost") {
			return fmt.Errorf("readyz?verbose = %d %q %v", code, body, err)
		}
		return nil
	})
	start := time.Now()
	out, err := c.kubectlErr("create", "configmap", "during-loss", "--request-timeout=2m")
	if err == nil {
		t.Fatalf("a write succeeded without quorum: %s", out)
	}
	if !strings.Contains(out+err.Error(), "lost quorum") {
		t.Fatalf("write without quorum failed without naming the lost quorum: %v\n%s", err, out)
	}
	t.Logf("write without quorum failed after %s: %s", time.Since(start).Round(100*time.Millisecond), strings.TrimSpace(out))
	if r := c.status(t); r.Etcd == nil || r.Etcd.Quorum {
		t.Fatalf("status during quorum loss: %+v %s", r.Etcd, r.EtcdError)
	}

	// Quorum regained by itself once one member is back.
	extras[1].start(t)
	eventually(t, time.Minute, func() error {
		_, err := c.kubectlErr("create", "configmap", "after-loss")
		return err
	})
	if code, body, err := readyzVerbose(c); err != nil || code != http.StatusOK {
		t.Fatalf("readyz after recovery = %d %q %v", code, body, err)
	}
	c.kubectl("get", "configmap", "before-loss")
	writes.waitForMore(t, 5, time.Minute)
	writes.stopAndCheck(t, c, "the quorum loss", lost)

	// The dead member's node goes: a Node object of that name, cordoned and deleted, its member removed.
	if _, err := c.kubectlIn(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"extra-1","labels":{"node-role.kubernetes.io/etcd":""}}}`, "create", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	rm, err := exec.Command(c.bin, "node", "remove", "extra-1", "--data-dir", c.dataDir).CombinedOutput()
	if err != nil {
		t.Fatalf("skiff node remove: %v\n%s", err, rm)
	}
	for _, want := range []string{"node/extra-1 cordoned", "etcd member", "node/extra-1 deleted"} {
		if !strings.Contains(string(rm), want) {
			t.Errorf("node remove output lacks %q:\n%s", want, rm)
		}
	}
	eventually(t, 30*time.Second, func() error {
		r := c.status(t)
		if r.Etcd == nil || len(r.Etcd.Members) != 2 || !r.Etcd.Quorum {
			return fmt.Errorf("want 2 members with quorum: %+v %s", r.Etcd, r.EtcdError)
		}
		for _, m := range r.Etcd.Members {
			if m.Name == "extra-1" {
				return errors.New("extra-1 still a member")
			}
		}
		return nil
	})
	if out, err := c.kubectlErr("get", "node", "extra-1"); err == nil {
		t.Fatalf("node extra-1 still exists: %s", out)
	}
}
