package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// Host runs the few commands the proxy needs on the node: nft, iptables-save, iptables-restore,
// iptables and ip. Wrap, when set, is put before every command (e.g. "ip netns exec NAME" in
// tests and benchmarks that work in their own network namespace).
type Host struct {
	Wrap []string
}

// Output runs name with args (inside Wrap) with stdin and returns its standard output; the
// error carries the command line and its standard error. The policy agent runs nft through it.
func (h Host) Output(ctx context.Context, stdin string, name string, args ...string) (string, error) {
	return h.run(ctx, stdin, name, args...)
}

func (h Host) run(ctx context.Context, stdin string, name string, args ...string) (string, error) {
	argv := append(append(append([]string(nil), h.Wrap...), name), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out.String(), nil
}

// Save is iptables-save of the nat and filter tables.
func (h Host) Save(ctx context.Context) (string, error) {
	nat, err := h.run(ctx, "", "iptables-save", "-t", "nat")
	if err != nil {
		return "", err
	}
	filter, err := h.run(ctx, "", "iptables-save", "-t", "filter")
	if err != nil {
		return "", err
	}
	return nat + filter, nil
}

// Restore feeds input to iptables-restore --noflush: only the chains it names change, atomically
// per table.
func (h Host) Restore(ctx context.Context, input string) error {
	if input == "" {
		return nil
	}
	_, err := h.run(ctx, input, "iptables-restore", "--noflush", "--wait")
	return err
}

// EnsureHook inserts the hook first in its built-in chain unless it is there already; it reports
// whether it had to.
func (h Host) EnsureHook(ctx context.Context, hook Hook) (bool, error) {
	spec := strings.Fields(hook.Rule)
	if _, err := h.run(ctx, "", "iptables", append([]string{"-w", "-t", hook.Table, "-C", hook.Chain}, spec...)...); err == nil {
		return false, nil
	}
	if _, err := h.run(ctx, "", "iptables", append([]string{"-w", "-t", hook.Table, "-I", hook.Chain, "1"}, spec...)...); err != nil {
		return false, fmt.Errorf("hook %s/%s: %w", hook.Table, hook.Chain, err)
	}
	return true, nil
}

// EnsureDevice makes the interface that holds the service range's route, so host-originated
// connections to a cluster IP are routed (then translated in nat OUTPUT and rerouted) and
// untranslated ones go nowhere but the filter's reject; metric keeps the routes of several nodes
// sharing one host apart.
func (h Host) EnsureDevice(ctx context.Context, name, cidr string, metric int) error {
	if _, err := h.run(ctx, "", "ip", "link", "show", "dev", name); err != nil {
		// A dummy interface, as kube-proxy's kube-ipvs0; where the kernel has no dummy driver, a
		// bridge without ports does the same: what is routed to it goes nowhere.
		if _, err := h.run(ctx, "", "ip", "link", "add", name, "type", "dummy"); err != nil {
			if _, err2 := h.run(ctx, "", "ip", "link", "add", name, "type", "bridge"); err2 != nil {
				return fmt.Errorf("service range device: %w", errors.Join(err, err2))
			}
		}
	}
	if _, err := h.run(ctx, "", "ip", "link", "set", name, "up"); err != nil {
		return fmt.Errorf("service range device: %w", err)
	}
	out, err := h.run(ctx, "", "ip", "-4", "route", "show", cidr, "dev", name)
	if err != nil {
		return fmt.Errorf("service range route: %w", err)
	}
	if strings.TrimSpace(out) == "" {
		if _, err := h.run(ctx, "", "ip", "route", "append", cidr, "dev", name, "metric", strconv.Itoa(metric)); err != nil {
			return fmt.Errorf("service range route: %w", err)
		}
	}
	return nil
}

// DeleteDevice removes the dummy interface and with it its route; a missing one is no error.
func (h Host) DeleteDevice(ctx context.Context, name string) error {
	if _, err := h.run(ctx, "", "ip", "link", "show", "dev", name); err != nil {
		return nil
	}
	_, err := h.run(ctx, "", "ip", "link", "del", name)
	return err
}

// EnableRouteLocalnet sets net.ipv4.conf.all.route_localnet=1, as kube-proxy does for
// 127.0.0.1 NodePorts (the FIREWALL chain drops what it would otherwise let in).
func (h Host) EnableRouteLocalnet(ctx context.Context) error {
	_, err := h.run(ctx, "", "sh", "-c", "echo 1 > /proc/sys/net/ipv4/conf/all/route_localnet")
	return err
}

// ConntrackTCPLiberal reads net.netfilter.nf_conntrack_tcp_be_liberal in the node's network
// namespace (inside Wrap). A node without it (nf_conntrack not loaded) tracks strictly once the
// module loads, so that reads as false.
func (h Host) ConntrackTCPLiberal(ctx context.Context) (bool, error) {
	v, err := h.ReadSysctl(ctx, "net/netfilter/nf_conntrack_tcp_be_liberal")
	return v != 0, err
}

// Cleanup removes every chain and hook of prefix, whatever run installed them; without
// iptables-save on the host (an nftables-only node) there is nothing to remove.
func (h Host) Cleanup(ctx context.Context, prefix string) error {
	if _, err := exec.LookPath("iptables-save"); err != nil {
		return nil
	}
	save, err := h.Save(ctx)
	if err != nil {
		return err
	}
	o := ParseSave(save, prefix)
	if o.Empty() {
		return nil
	}
	return errors.Join(h.Restore(ctx, CleanupPlan(o)))
}
