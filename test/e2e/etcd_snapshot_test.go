package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestEtcdScheduledSnapshotsRetention: a control plane snapshots etcd every 10 seconds (cron with
// a seconds field) with retention 3. After at least 5 runs exactly the 3 newest scheduled files
// are in --etcd-snapshot-dir, each with its sha256 sidecar; the ConfigMap index
// kube-system/skiff-etcd-snapshots lists the same 3, Events on it record every save and prune,
// `skiff etcd snapshot ls` shows them, and a snapshot saved by hand into the same directory is
// never pruned. `skiff etcd snapshot prune` then keeps 1 and updates the index.
func TestEtcdScheduledSnapshotsRetention(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snapshots")
	c := newCluster(t, "--etcd-snapshot-schedule=*/10 * * * * *", "--etcd-snapshot-retention=3", "--etcd-snapshot-dir="+dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	byHand := filepath.Join(dir, "before-upgrade.db")
	if out, err := exec.Command(c.bin, "etcd", "snapshot", "save", "--data-dir", c.dataDir, byHand).CombinedOutput(); err != nil {
		t.Fatalf("snapshot save: %v\n%s", err, out)
	}
	began := time.Now()
	var files []string
	eventually(t, 3*time.Minute, func() error {
		saved := strings.Fields(c.kubectl("get", "events", "-n", "kube-system", "--field-selector", "reason=EtcdSnapshotSaved", "-o", "jsonpath={.items[*].metadata.name}"))
		if len(saved) < 5 {
			return fmt.Errorf("%d scheduled snapshots saved, want at least 5", len(saved))
		}
		files = scheduledSnapshots(t, dir)
		if len(files) != 3 {
			return fmt.Errorf("after %d runs the dir holds %d scheduled snapshots, want 3: %v", len(saved), len(files), files)
		}
		keys := strings.Fields(c.kubectl("get", "configmap", "-n", "kube-system", "skiff-etcd-snapshots", "-o", `go-template={{range $k, $v := .data}}{{$k}} {{end}}`))
		if !slices.Equal(keys, files) {
			return fmt.Errorf("the index lists %v, the dir holds %v", keys, files)
		}
		return nil
	})
	t.Logf("figure: 5+ scheduled snapshots, retention 3, in %s", time.Since(began).Round(time.Second))
	for _, f := range files {
		// The sidecar is sha256sum's format: the file checks with the standard tool.
		cmd := exec.Command("sha256sum", "-c", f+".sha256")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			if _, statErr := os.Stat(filepath.Join(dir, f)); statErr != nil {
				continue // pruned by a later run meanwhile
			}
			t.Fatalf("sha256sum -c %s.sha256: %v\n%s", f, err, out)
		}
	}
	if _, err := os.Stat(byHand); err != nil {
		t.Fatalf("retention removed the snapshot saved by hand: %v", err)
	}
	pruned := c.kubectl("get", "events", "-n", "kube-system", "--field-selector", "reason=EtcdSnapshotPruned", "-o", "jsonpath={.items[*].message}")
	mustContain(t, pruned, "retention 3")

	ls, err := exec.Command(c.bin, "etcd", "snapshot", "ls", "--data-dir", c.dataDir, "--etcd-snapshot-dir", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("snapshot ls: %v\n%s", err, ls)
	}
	t.Logf("skiff etcd snapshot ls:\n%s", ls)
	mustContain(t, string(ls), "NAME", "before-upgrade.db")
	for _, f := range files {
		// Scheduled snapshots retention has not pruned since (a run may have come in between).
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil && !strings.Contains(string(ls), f) {
			t.Fatalf("ls does not show %s:\n%s", f, ls)
		}
	}
	mustContain(t, string(ls), dir+",index")

	// By hand: keep 1. The schedule may add one meanwhile; the pruned ones are gone from the index.
	out, err := exec.Command(c.bin, "etcd", "snapshot", "prune", "--data-dir", c.dataDir, "--etcd-snapshot-dir", dir, "--etcd-snapshot-retention", "1").CombinedOutput()
	if err != nil {
		t.Fatalf("snapshot prune: %v\n%s", err, out)
	}
	mustContain(t, string(out), "pruned skiff-etcd-")
	keys := c.kubectl("get", "configmap", "-n", "kube-system", "skiff-etcd-snapshots", "-o", `go-template={{range $k, $v := .data}}{{$k}} {{end}}`)
	for _, l := range strings.Split(string(out), "\n") {
		if name, ok := strings.CutPrefix(l, "pruned "); ok && strings.Contains(keys, name) {
			t.Fatalf("pruned %s is still in the index: %s", name, keys)
		}
	}
	if _, err := os.Stat(byHand); err != nil {
		t.Fatalf("prune removed the snapshot saved by hand: %v", err)
	}
}

// scheduledSnapshots are the scheduler's files in dir, sorted.
func scheduledSnapshots(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "skiff-etcd-") && strings.HasSuffix(e.Name(), ".db") {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

// TestEtcdClusterResetFromSnapshot: three stacked control planes (127.0.0.2-4); a writer records
// acknowledged writes, a snapshot is saved, a second writer records more. Every node is stopped
// and its etcd data wiped. One node starts with --cluster-reset --restore-from the snapshot: a
// one-member etcd with the snapshot's data, its identity and PKI kept. The other two start again
// as they normally restart (--server, no token): they join it as new members. Every write
// acknowledged before the snapshot reads back, none after it; the three are healthy voters. A
// restart of the reset node with the flags still set keeps what was written since.
func TestEtcdClusterResetFromSnapshot(t *testing.T) {
	first := newCluster(t, "--bind-address=127.0.0.2", "--node-name=ha-1")
	token := first.createToken("--control-plane", "--ttl", "1h")
	server := fmt.Sprintf("https://127.0.0.2:%d", first.ports[0])
	nodes := []*cluster{first}
	for i, addr := range []string{"127.0.0.3", "127.0.0.4"} {
		n := &cluster{t: t, bin: first.bin, dataDir: filepath.Join(t.TempDir(), "node"), ports: first.ports,
			extraArgs: []string{"--bind-address=" + addr, fmt.Sprintf("--node-name=ha-%d", i+2), "--server", server, "--token", token}}
		n.kubeconfig = filepath.Join(n.dataDir, "admin.kubeconfig")
		if err := os.MkdirAll(n.dataDir, 0o700); err != nil {
			t.Fatal(err)
		}
		n.start()
		t.Cleanup(n.stop)
		nodes = append(nodes, n)
	}
	waitMembers(t, first, "ha-1", "ha-2", "ha-3")

	before := startWriteRecorder(t, "before", nodes...)
	before.waitForMore(t, 30, 2*time.Minute)
	before.halt()
	snapshot := filepath.Join(t.TempDir(), "cluster.db")
	if out, err := exec.Command(first.bin, "etcd", "snapshot", "save", "--data-dir", nodes[1].dataDir, snapshot).CombinedOutput(); err != nil {
		t.Fatalf("snapshot save: %v\n%s", err, out)
	}
	after := startWriteRecorder(t, "after", nodes...)
	after.waitForMore(t, 30, 2*time.Minute)
	after.halt()
	t.Logf("%d writes acknowledged before the snapshot, %d after", len(before.acked), len(after.acked))

	for _, n := range nodes {
		n.stop()
	}
	for _, n := range nodes {
		if err := os.RemoveAll(filepath.Join(n.dataDir, "etcd")); err != nil {
			t.Fatal(err)
		}
	}

	began := time.Now()
	first.extraArgs = append(first.extraArgs, "--cluster-reset", "--restore-from", snapshot)
	first.start()
	mustContain(t, first.log(), "cluster reset: etcd is a new one-member cluster")
	waitMembers(t, first, "ha-1")
	for _, n := range nodes[1:] {
		var args []string
		for _, a := range n.extraArgs {
			if a != "--token" && a != token {
				args = append(args, a)
			}
		}
		n.extraArgs = args
		n.start()
	}
	waitMembers(t, first, "ha-1", "ha-2", "ha-3")
	t.Logf("figure: reset from the snapshot to 3 healthy members in %s", time.Since(began).Round(100*time.Millisecond))

	for _, n := range nodes {
		names := n.kubectl("get", "configmaps", "-o", "name")
		for _, w := range before.acked {
			if !strings.Contains(names, "configmap/"+w+"\n") {
				t.Fatalf("%s: write %s acknowledged before the snapshot is missing", n.dataDir, w)
			}
		}
		for _, w := range after.acked {
			if strings.Contains(names, "configmap/"+w+"\n") {
				t.Fatalf("%s: write %s acknowledged after the snapshot came back", n.dataDir, w)
			}
		}
	}

	// The reset node restarted with the flags still on its command line keeps what the cluster
	// wrote since the reset.
	nodes[2].kubectl("create", "configmap", "since-the-reset")
	first.stop()
	first.start()
	mustContain(t, first.log(), "reset from this snapshot already")
	waitMembers(t, first, "ha-1", "ha-2", "ha-3")
	mustContain(t, first.kubectl("get", "configmap", "since-the-reset", "-o", "name"), "configmap/since-the-reset")
}

// waitMembers waits until c's etcd has exactly the named members, all healthy voters.
func waitMembers(t *testing.T, c *cluster, names ...string) {
	t.Helper()
	eventually(t, 2*time.Minute, func() error {
		r := c.status(t)
		if r.Etcd == nil || !r.Etcd.Quorum {
			return fmt.Errorf("no quorum: %+v %s", r.Etcd, r.EtcdError)
		}
		var got []string
		for _, m := range r.Etcd.Members {
			if m.IsLearner || !m.Healthy {
				return fmt.Errorf("member %q not a healthy voter", m.Name)
			}
			got = append(got, m.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, names) {
			return fmt.Errorf("members %v, want %v", got, names)
		}
		return nil
	})
}
