package addresses

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Holder keeps the held addresses on the interface of the node's address.
type Holder struct {
	nodeIP    netip.Addr
	stateFile string
	log       *slog.Logger

	mu sync.Mutex
}

// New returns a Holder for the interface that carries nodeIP, recording what it adds in
// stateFile.
func New(nodeIP netip.Addr, stateFile string, log *slog.Logger) *Holder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Holder{nodeIP: nodeIP.Unmap(), stateFile: stateFile, log: log}
}

// Hold makes want the node's held addresses: adds those missing (each announced with a
// gratuitous ARP) and removes those it added before that want no longer has.
func (h *Holder) Hold(_ context.Context, want []netip.Addr) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	ours, err := h.readState()
	if err != nil {
		return err
	}
	if len(want) == 0 && len(ours) == 0 {
		return nil // nothing to hold or give back: the interface is not even looked for
	}
	link, onLink, err := h.link()
	if err != nil {
		return err
	}
	p := plan(onLink, ours, want)
	var errs []error
	for _, a := range p.remove {
		if err := netlink.AddrDel(link, hostAddr(a)); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
			errs = append(errs, fmt.Errorf("remove %s from %s: %w", a, link.Attrs().Name, err))
			p.ours = append(p.ours, a) // still ours: removed at the next Hold
			continue
		}
		h.log.Info("gateway address released", "address", a, "interface", link.Attrs().Name)
	}
	for _, a := range p.add {
		if err := netlink.AddrAdd(link, hostAddr(a)); err != nil && !errors.Is(err, unix.EEXIST) {
			errs = append(errs, fmt.Errorf("add %s to %s: %w", a, link.Attrs().Name, err))
			p.ours = slices.DeleteFunc(p.ours, func(o netip.Addr) bool { return o == a })
			continue
		}
		h.log.Info("gateway address held", "address", a, "interface", link.Attrs().Name)
		if err := announce(link, a); err != nil {
			// Neighbours learn the address at their next ARP request: slower, not wrong.
			h.log.Warn("gratuitous ARP not sent", "address", a, "interface", link.Attrs().Name, "err", err)
		}
	}
	if err := h.writeState(p.ours); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Release removes every address the Holder added (a node stopping lets another take them).
func (h *Holder) Release(ctx context.Context) error { return h.Hold(ctx, nil) }

// link finds the interface with the node's address and the IPv4 addresses it has.
func (h *Holder) link() (netlink.Link, []netip.Addr, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, nil, fmt.Errorf("list interfaces: %w", err)
	}
	for _, l := range links {
		addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
		if err != nil {
			return nil, nil, fmt.Errorf("addresses of %s: %w", l.Attrs().Name, err)
		}
		var have []netip.Addr
		found := false
		for _, a := range addrs {
			ip, ok := netip.AddrFromSlice(a.IP)
			if !ok {
				continue
			}
			ip = ip.Unmap()
			have = append(have, ip)
			found = found || ip == h.nodeIP
		}
		if found {
			return l, have, nil
		}
	}
	return nil, nil, fmt.Errorf("no interface has the node's address %s", h.nodeIP)
}

func (h *Holder) readState() ([]netip.Addr, error) {
	b, err := os.ReadFile(h.stateFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read held addresses: %w", err)
	}
	var out []netip.Addr
	for line := range strings.Lines(string(b)) {
		if a, err := netip.ParseAddr(strings.TrimSpace(line)); err == nil {
			out = append(out, a)
		}
	}
	return out, nil
}

func (h *Holder) writeState(ours []netip.Addr) error {
	var b strings.Builder
	for _, a := range ours {
		b.WriteString(a.String() + "\n")
	}
	if err := os.MkdirAll(filepath.Dir(h.stateFile), 0o700); err != nil {
		return fmt.Errorf("record held addresses: %w", err)
	}
	tmp := h.stateFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("record held addresses: %w", err)
	}
	if err := os.Rename(tmp, h.stateFile); err != nil {
		return fmt.Errorf("record held addresses: %w", err)
	}
	return nil
}

func hostAddr(a netip.Addr) *netlink.Addr {
	return &netlink.Addr{IPNet: &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(a.BitLen(), a.BitLen())}}
}

// changes is what Hold does: add these, remove those, and which addresses are ours after.
type changes struct {
	add, remove, ours []netip.Addr
}

// plan decides Hold's changes from the interface's addresses, those recorded as ours and those
// wanted: add what is wanted and missing; remove what is ours and no longer wanted; an address
// on the interface that is not ours is used when wanted and never removed.
func plan(onLink, ours, want []netip.Addr) changes {
	var c changes
	for _, a := range want {
		switch {
		case !slices.Contains(onLink, a):
			c.add = append(c.add, a)
			c.ours = append(c.ours, a)
		case slices.Contains(ours, a):
			c.ours = append(c.ours, a)
		}
	}
	for _, a := range ours {
		if !slices.Contains(want, a) && slices.Contains(onLink, a) {
			c.remove = append(c.remove, a)
		}
	}
	return c
}
