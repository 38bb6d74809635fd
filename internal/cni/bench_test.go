package cni

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSandboxNetwork measures the CPU one sandbox's network costs the node, the way
// containerd 1.6 drives CNI: ADD at RunPodSandbox, DEL at StopPodSandbox and again at
// RemovePodSandbox. "stock" is the network list skiff wrote before (bridge with host-local and
// ipMasq, then portmap); "skiff" is skiff's plugin, run as the skiff binary named by
// SKIFF_BINARY (go build -o /tmp/skiff ./cmd/skiff) or, without it, this test binary. Everything
// runs in network namespaces the benchmark creates. cpu-ms/op counts the plugins and their
// children (iptables), from the kernel's accounting of each exec.
//
//	sudo SKIFF_BINARY=/tmp/skiff go test -run '^$' -bench SandboxNetwork -benchtime 20x ./internal/cni
func BenchmarkSandboxNetwork(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	for _, p := range []string{"bridge", "host-local", "portmap"} {
		if _, err := os.Stat(filepath.Join("/usr/lib/cni", p)); err != nil {
			b.Skip("needs the CNI plugins in /usr/lib/cni")
		}
	}
	binary := os.Getenv("SKIFF_BINARY")
	if binary == "" {
		var err error
		if binary, err = os.Executable(); err != nil {
			b.Fatal(err)
		}
	}
	id := fmt.Sprintf("%x", time.Now().UnixNano()&0xffffff)
	nodeNS := testNetns(b, "skcnib-node-"+id)
	podNS := testNetns(b, "skcnib-pod-"+id)
	dir := b.TempDir()
	plugin := filepath.Join(dir, Type)
	if err := os.Symlink(binary, plugin); err != nil {
		b.Fatal(err)
	}

	stock := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"b%s","type":"bridge","bridge":"skbb%s","isGateway":true,"ipMasq":true,"hairpinMode":true,"ipam":{"type":"host-local","dataDir":"%s","ranges":[[{"subnet":"10.250.62.0/24"}]],"routes":[{"dst":"0.0.0.0/0"}]}}`, id, id[:4], filepath.Join(dir, "host-local"))
	skiffConf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"s%s","type":"skiff-bridge","bridge":"sksb%s","subnets":["10.250.63.0/24"],"stateDir":"%s","hairpinMode":true,"ipMasq":true,"portmapPath":"/usr/lib/cni/portmap","capabilities":{"portMappings":true}}`, id, id[:4], filepath.Join(dir, "state"))

	// run execs one plugin in the node's namespace and returns its stdout and CPU time
	// (its own and its reaped children's).
	run := func(b *testing.B, path, command, container string, stdin []byte) ([]byte, time.Duration) {
		cmd := exec.Command("nsenter", "--net="+nodeNS, "--", path)
		cmd.Env = []string{"CNI_COMMAND=" + command, "CNI_CONTAINERID=" + container, "CNI_NETNS=" + podNS, "CNI_IFNAME=eth0", "CNI_PATH=/usr/lib/cni", "PATH=" + os.Getenv("PATH")}
		cmd.Stdin = bytes.NewReader(stdin)
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s %s: %v: %s", filepath.Base(path), command, err, out.String())
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		return out.Bytes(), time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	portmapConf := func(prev []byte) []byte {
		conf := map[string]any{"cniVersion": "1.0.0", "name": "b" + id, "type": "portmap", "capabilities": map[string]bool{"portMappings": true}}
		if prev != nil {
			conf["prevResult"] = json.RawMessage(prev)
		}
		raw, _ := json.Marshal(conf)
		return raw
	}
	// nsenter's own CPU is counted too, equally for both: measure it to subtract.
	nsenterCost := func(b *testing.B) time.Duration {
		cmd := exec.Command("nsenter", "--net="+nodeNS, "--", "true")
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}

	b.Run("stock", func(b *testing.B) {
		var cpu time.Duration
		for i := range b.N {
			c := fmt.Sprintf("stock-%d", i)
			res, d := run(b, "/usr/lib/cni/bridge", "ADD", c, []byte(stock))
			cpu += d
			_, d = run(b, "/usr/lib/cni/portmap", "ADD", c, portmapConf(res))
			cpu += d
			for range 2 {
				_, d = run(b, "/usr/lib/cni/portmap", "DEL", c, portmapConf(nil))
				cpu += d
				_, d = run(b, "/usr/lib/cni/bridge", "DEL", c, []byte(stock))
				cpu += d
			}
			cpu -= 6 * nsenterCost(b)
		}
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		b.ReportMetric(6, "execs/op")
	})
	b.Run("skiff", func(b *testing.B) {
		var cpu time.Duration
		for i := range b.N {
			c := fmt.Sprintf("skiff-%d", i)
			_, d := run(b, plugin, "ADD", c, []byte(skiffConf))
			cpu += d
			for range 2 {
				_, d = run(b, plugin, "DEL", c, []byte(skiffConf))
				cpu += d
			}
			cpu -= 3 * nsenterCost(b)
		}
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		b.ReportMetric(3, "execs/op")
	})
}
