package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
	var mu sync.Mutex
	var acked []string
	var lastFailure, firstFailure time.Time
	var slowest time.Duration
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for si, s := range survivors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("ha-w%d-%d", si, i)
				began := time.Now()
				_, err := s.kubectlErr("create", "configmap", name, "--request-timeout=15s")
				mu.Lock()
				slowest = max(slowest, time.Since(began))
				if err == nil {
					acked = append(acked, name)
				} else {
					if firstFailure.IsZero() {
						firstFailure = time.Now()
					}
					lastFailure = time.Now()
				}
				mu.Unlock()
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
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
	mu.Lock()
	before := len(acked)
	mu.Unlock()
	eventually(t, time.Minute, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(acked) < before+10 {
			return fmt.Errorf("%d writes acknowledged since the new leader, want 10", len(acked)-before)
		}
		return nil
	})
	close(stop)
	wg.Wait()
	out := survivors[0].kubectl("get", "configmaps", "-o", "name")
	for _, n := range acked {
		if !strings.Contains(out, "configmap/"+n+"\n") {
			t.Fatalf("acknowledged write %s lost across the leader kill", n)
		}
	}
	window := time.Duration(0)
	if !lastFailure.IsZero() && lastFailure.After(killed) {
		window = lastFailure.Sub(firstFailure)
	}
	t.Logf("%d acknowledged writes all read back; failed-write window after the kill: %s; slowest kubectl create: %s",
		len(acked), window.Round(100*time.Millisecond), slowest.Round(100*time.Millisecond))

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
	mustContain(t, victim.kubectl("get", "configmap", acked[len(acked)-1]), acked[len(acked)-1])
}
