package proxy

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ConntrackTimeouts are the conntrack TCP timeouts the proxy gives its node's network namespace,
// as kube-proxy's conntrack settings do. Zero leaves the node's value.
type ConntrackTimeouts struct {
	// TCPEstablished is net.netfilter.nf_conntrack_tcp_timeout_established (kube-proxy: 24h):
	// a long-lived idle connection through a Service keeps its NAT entry.
	TCPEstablished time.Duration
	// TCPCloseWait is net.netfilter.nf_conntrack_tcp_timeout_close_wait (kube-proxy: 1h): a
	// connection one side half-closed keeps its translation while the other side still sends.
	// The kernel's 60 s would drop it and the rest would reach the pod untranslated.
	TCPCloseWait time.Duration
}

// DefaultConntrackTimeouts are kube-proxy's defaults.
func DefaultConntrackTimeouts() ConntrackTimeouts {
	return ConntrackTimeouts{TCPEstablished: 24 * time.Hour, TCPCloseWait: time.Hour}
}

const (
	sysctlTCPEstablished = "net/netfilter/nf_conntrack_tcp_timeout_established"
	sysctlTCPCloseWait   = "net/netfilter/nf_conntrack_tcp_timeout_close_wait"
)

// SysctlWrite is one value the proxy writes under /proc/sys.
type SysctlWrite struct {
	Name  string // slash-separated, under /proc/sys
	Value int
}

// conntrackWrites decides the writes that bring the node to want, given its current values in
// seconds (a missing name: not readable, so not written either). A value already right is left
// alone (pure).
func conntrackWrites(current map[string]int, want ConntrackTimeouts) []SysctlWrite {
	var writes []SysctlWrite
	for _, s := range []struct {
		name string
		want time.Duration
	}{{sysctlTCPEstablished, want.TCPEstablished}, {sysctlTCPCloseWait, want.TCPCloseWait}} {
		seconds := int(s.want / time.Second)
		if seconds <= 0 {
			continue
		}
		if got, ok := current[s.name]; ok && got != seconds {
			writes = append(writes, SysctlWrite{Name: s.name, Value: seconds})
		}
	}
	return writes
}

// applyConntrackTimeouts reads the node's conntrack timeouts and writes those that differ from
// want. Run calls it once its rules exist: their conntrack matches load nf_conntrack, whose
// sysctls appear with it.
func applyConntrackTimeouts(ctx context.Context, h Host, want ConntrackTimeouts) ([]SysctlWrite, error) {
	if want == (ConntrackTimeouts{}) {
		return nil, nil
	}
	current := map[string]int{}
	for _, name := range []string{sysctlTCPEstablished, sysctlTCPCloseWait} {
		v, err := h.ReadSysctl(ctx, name)
		if err != nil {
			return nil, err
		}
		current[name] = v
	}
	writes := conntrackWrites(current, want)
	for _, w := range writes {
		if err := h.WriteSysctl(ctx, w); err != nil {
			return nil, err
		}
	}
	return writes, nil
}

// ReadSysctl reads an integer sysctl in the node's network namespace (inside Wrap).
func (h Host) ReadSysctl(ctx context.Context, name string) (int, error) {
	out, err := h.run(ctx, "", "cat", "/proc/sys/"+name)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", name, err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", name, err)
	}
	return v, nil
}

// WriteSysctl writes an integer sysctl in the node's network namespace (inside Wrap).
func (h Host) WriteSysctl(ctx context.Context, w SysctlWrite) error {
	if _, err := h.run(ctx, strconv.Itoa(w.Value)+"\n", "tee", "/proc/sys/"+w.Name); err != nil {
		return fmt.Errorf("write %s=%d: %w", w.Name, w.Value, err)
	}
	return nil
}
