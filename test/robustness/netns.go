package robustness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"github.com/vishvananda/netns"
)

// Net is a bridge on the host with a /24 of its own (172.31.<n>.0/24, one no address or route of
// the machine uses) and hosts in network namespaces of their own wired to it by veth pairs, as
// the e2e harness builds for nodes with the worker role: each runs its own containerd, pod
// bridge and service rules, which would collide in one namespace. Every name carries a random id;
// Remove deletes all of it.
type Net struct {
	id, Bridge, Prefix string
	hosts              []*Host
}

// Host is one network namespace on a Net.
type Host struct {
	NS, IP, veth string
}

// NewNet creates the bridge, with the subnet's .1 on the host.
func NewNet() (*Net, error) {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	n := &Net{id: hex.EncodeToString(b)}
	n.Bridge = "skrb" + n.id
	used, _ := exec.Command("ip", "-4", "addr").CombinedOutput()
	routes, _ := exec.Command("ip", "-4", "route").CombinedOutput()
	for i := range 150 {
		p := "172.31." + strconv.Itoa(100+(int(b[0])+i)%150)
		if !strings.Contains(string(used), p+".") && !strings.Contains(string(routes), p+".") {
			n.Prefix = p
			break
		}
	}
	if n.Prefix == "" {
		return nil, errors.New("no free 172.31.x.0/24 subnet")
	}
	for _, args := range [][]string{
		{"link", "add", n.Bridge, "type", "bridge"},
		{"addr", "add", n.Prefix + ".1/24", "dev", n.Bridge},
		{"link", "set", n.Bridge, "up"},
	} {
		if err := ip(args...); err != nil {
			_ = ip("link", "del", n.Bridge)
			return nil, err
		}
	}
	return n, nil
}

func ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// AddHost creates a namespace wired to the bridge, with the next address.
func (n *Net) AddHost() (*Host, error) {
	i := len(n.hosts) + 1
	h := &Host{NS: fmt.Sprintf("skrb%s-%d", n.id, i), IP: fmt.Sprintf("%s.%d", n.Prefix, i+1), veth: fmt.Sprintf("skrv%s%d", n.id, i)}
	if err := ip("netns", "add", h.NS); err != nil {
		return nil, err
	}
	n.hosts = append(n.hosts, h)
	in := func(args ...string) error { return ip(append([]string{"-n", h.NS}, args...)...) }
	for _, step := range []func() error{
		func() error { return ip("link", "add", h.veth, "type", "veth", "peer", "name", h.veth+"p") },
		func() error { return ip("link", "set", h.veth, "master", n.Bridge, "up") },
		func() error { return ip("link", "set", h.veth+"p", "netns", h.NS) },
		func() error { return in("link", "set", h.veth+"p", "name", "eth0") },
		func() error { return in("addr", "add", h.IP+"/24", "dev", "eth0") },
		func() error { return in("link", "set", "eth0", "up") },
		func() error { return in("link", "set", "lo", "up") },
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// Remove kills what still runs in the namespaces (the test started all of it), deletes them,
// their veths and the bridge.
func (n *Net) Remove() error {
	var errs []error
	for _, h := range n.hosts {
		if out, err := exec.Command("ip", "netns", "pids", h.NS).Output(); err == nil {
			for _, f := range strings.Fields(string(out)) {
				if pid, err := strconv.Atoi(f); err == nil {
					if p, err := os.FindProcess(pid); err == nil {
						_ = p.Kill()
					}
				}
			}
		}
		_ = ip("link", "del", h.veth)
		if err := ip("netns", "del", h.NS); err != nil {
			errs = append(errs, err)
		}
	}
	if err := ip("link", "del", n.Bridge); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Command runs a program in the host's network namespace only (mounts and cgroups stay the
// machine's: `ip netns exec` would remount /sys, which containerd's cgroups need). nsenter execs
// the program, so the process is the program's.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=/var/run/netns/" + h.NS, name}, args...)...)
}

// DialContext opens a connection from inside the namespace: the socket is made on a thread moved
// into it, and belongs to it from then on. So the test reaches a node's balancer, which listens
// on its namespace's loopback.
func (h *Host) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("current network namespace: %w", err)
	}
	defer orig.Close()
	target, err := netns.GetFromName(h.NS)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("network namespace %s: %w", h.NS, err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("enter %s: %w", h.NS, err)
	}
	var d net.Dialer
	conn, dialErr := d.DialContext(ctx, network, addr)
	if err := netns.Set(orig); err != nil {
		// The thread stays locked, so it ends with this goroutine instead of serving others
		// in the wrong namespace.
		if conn != nil {
			conn.Close()
		}
		return nil, fmt.Errorf("leave %s: %w", h.NS, err)
	}
	runtime.UnlockOSThread()
	return conn, dialErr
}
