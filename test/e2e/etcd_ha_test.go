package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestEtcdHAStackedJoinAndLeaderKill starts three `skiff server --roles etcd,controlplane` nodes on
// 127.0.0.2, .3 and .4 sharing every port number; the second and third join with a control-plane
// token (`--server --token`: the CA pin checked, the cluster's keys fetched, the etcd member added
// as a learner through the membership API and promoted). Then the node holding the etcd leader is
// killed: writes through the survivors continue, and every acknowledged write is read back; the
// killed node restarts without its token and rejoins from its own data.
func TestEtcdHAStackedJoinAndLeaderKill(t *testing.T) {
	first := newCluster(t, "--bind-address=127.0.0.2", "--node-name=ha-1")
	token := first.createToken("--control-plane", "--ttl", "1h")
	server := fmt.Sprintf("https://127.0.0.2:%d", first.ports[0])
	nodes := []*cluster{first}
	for i, addr := range []string{"127.0.0.3", "127.0.0.4"} {
		n := &cluster{t: t, bin: first.bin, dataDir: filepath.Join(t.TempDir(), "node"), ports: first.ports,
			extraArgs: []string{"--bind-address=" + addr, fmt.Sprintf("--node-name=ha-%d", i+2), "--server", server, "--token", token}}
		n.kubeconfig = filepath.Join(n.dataDir, "admin.kubeconfig")
		if err := os.MkdirAll(n.dataDir, 0o700); err != nil { // the harness logs into it
			t.Fatal(err)
		}
		start := time.Now()
		n.start()
		t.Cleanup(n.stop)
		t.Logf("node ha-%d joined etcd and served in %s", i+2, time.Since(start).Round(100*time.Millisecond))
		nodes = append(nodes, n)
	}
	var leader string
	eventually(t, time.Minute, func() error {
		r := first.status(t)
		if r.Etcd == nil || len(r.Etcd.Members) != 3 || !r.Etcd.Quorum {
			return fmt.Errorf("want 3 members with quorum: %+v %s", r.Etcd, r.EtcdError)
		}
		for _, m := range r.Etcd.Members {
			if m.IsLearner || !m.Healthy {
				return fmt.Errorf("member %s not a healthy voter", m.Name)
			}
			if m.IsLeader {
				leader = m.Name
			}
		}
		return nil
	})
	var victim *cluster
	var survivors []*cluster
	for i, n := range nodes {
		if fmt.Sprintf("ha-%d", i+1) == leader {
			victim = n
		} else {
			survivors = append(survivors, n)
		}
	}
	if victim == nil {
		t.Fatalf("etcd leader %q is none of the nodes", leader)
	}

	// A writer per survivor records every acknowledged write across the kill.
	writes := startWriteRecorder(t, "ha", survivors...)
	time.Sleep(2 * time.Second)
	killed := time.Now()
	victim.kill()
	t.Logf("killed %s (etcd leader)", leader)
	eventually(t, time.Minute, func() error {
		r := survivors[0].status(t)
		if r.Etcd == nil || r.Etcd.LeaderID == "" || !r.Etcd.Quorum {
			return fmt.Errorf("no new leader yet: %+v %s", r.Etcd, r.EtcdError)
		}
		for _, m := range r.Etcd.Members {
			if m.IsLeader && m.Name == leader {
				return fmt.Errorf("killed member still leader")
			}
		}
		return nil
	})
	writes.waitForMore(t, 10, time.Minute)
	writes.stopAndCheck(t, survivors[0], "the etcd leader kill", killed)

	// The killed node comes back without a token (it has its keys and its etcd data) and rejoins.
	var args []string
	for _, a := range victim.extraArgs {
		if a != "--token" && a != token {
			args = append(args, a)
		}
	}
	victim.extraArgs = args
	victim.start()
	eventually(t, time.Minute, func() error {
		r := survivors[0].status(t)
		if r.Etcd == nil || !r.Etcd.Quorum {
			return fmt.Errorf("no quorum: %+v %s", r.Etcd, r.EtcdError)
		}
		for _, m := range r.Etcd.Members {
			if m.Name == leader && !m.Healthy {
				return fmt.Errorf("restarted member %s not healthy yet", m.Name)
			}
		}
		return nil
	})
	last := writes.acked[len(writes.acked)-1]
	mustContain(t, victim.kubectl("get", "configmap", last), last)
}
