package cni

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// leaseStore keeps address leases as files: <stateDir>/<network>/<address> holding
// "<containerID>/<ifName>". Creating a lease is an O_EXCL create, so plugin processes running at
// the same time never hand out one address twice, with no lock; the files survive restarts of
// skiff and containerd, and DEL removes them.
type leaseStore struct {
	dir string
}

// candidates bounds how many addresses one allocation looks at.
const candidates = 1 << 16

func newLeaseStore(stateDir, network string) (*leaseStore, error) {
	dir := filepath.Join(stateDir, network)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lease dir: %w", err)
	}
	return &leaseStore{dir: dir}, nil
}

func holder(containerID, ifName string) string { return containerID + "/" + ifName }

// held reads every lease: address -> holder.
func (s *leaseStore) held() (map[netip.Addr]string, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("read leases: %w", err)
	}
	out := make(map[netip.Addr]string, len(entries))
	for _, e := range entries {
		a, err := netip.ParseAddr(e.Name())
		if err != nil {
			continue // last-<family> and temporary files
		}
		raw, err := os.ReadFile(filepath.Join(s.dir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("read lease %s: %w", a, err)
		}
		out[a] = strings.TrimSpace(string(raw))
	}
	return out, nil
}

// acquire leases one address per range for who, reusing what who holds already (ADD retried).
func (s *leaseStore) acquire(ranges []Range, who string) ([]netip.Addr, error) {
	held, err := s.held()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(ranges))
	for _, r := range ranges {
		if a, ok := heldBy(held, r, who); ok {
			out = append(out, a)
			continue
		}
		a, err := s.take(r, who, held)
		if err != nil {
			s.releaseAddrs(out, who)
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func heldBy(held map[netip.Addr]string, r Range, who string) (netip.Addr, bool) {
	for a, h := range held {
		if h == who && r.Subnet.Contains(a) {
			return a, true
		}
	}
	return netip.Addr{}, false
}

func (s *leaseStore) lastFile(r Range) string {
	if r.Subnet.Addr().Is4() {
		return filepath.Join(s.dir, "last-v4")
	}
	return filepath.Join(s.dir, "last-v6")
}

func (s *leaseStore) take(r Range, who string, held map[netip.Addr]string) (netip.Addr, error) {
	var last netip.Addr
	if raw, err := os.ReadFile(s.lastFile(r)); err == nil {
		last, _ = netip.ParseAddr(strings.TrimSpace(string(raw)))
	}
	used := func(a netip.Addr) bool { _, ok := held[a]; return ok }
	for {
		a, ok := NextFree(r, last, used, candidates)
		if !ok {
			return netip.Addr{}, errorf(codeTryAgainLater, "no free address", "range %s is full", r.Subnet)
		}
		f, err := os.OpenFile(filepath.Join(s.dir, a.String()), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if errors.Is(err, fs.ErrExist) {
			held[a] = "" // another plugin took it just now
			last = a
			continue
		}
		if err != nil {
			return netip.Addr{}, fmt.Errorf("lease %s: %w", a, err)
		}
		_, werr := f.WriteString(who)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			_ = os.Remove(f.Name())
			return netip.Addr{}, fmt.Errorf("lease %s: %w", a, werr)
		}
		held[a] = who
		// Only a hint: losing it (a crash here) means the next lease starts lower.
		_ = os.WriteFile(s.lastFile(r), []byte(a.String()), 0o600)
		return a, nil
	}
}

// release frees every address who holds; nothing held is not an error (DEL is idempotent).
func (s *leaseStore) release(who string) error {
	held, err := s.held()
	if err != nil {
		return err
	}
	var addrs []netip.Addr
	for a, h := range held {
		if h == who {
			addrs = append(addrs, a)
		}
	}
	return s.releaseAddrs(addrs, who)
}

func (s *leaseStore) releaseAddrs(addrs []netip.Addr, who string) error {
	var errs []error
	for _, a := range addrs {
		path := filepath.Join(s.dir, a.String())
		// Re-read: the address may have been released and leased to another meanwhile.
		if raw, err := os.ReadFile(path); err != nil || strings.TrimSpace(string(raw)) != who {
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("release %s: %w", a, err))
		}
	}
	return errors.Join(errs...)
}

// lookup returns who's addresses, one per range in order, and whether all are held.
func (s *leaseStore) lookup(ranges []Range, who string) ([]netip.Addr, bool, error) {
	held, err := s.held()
	if err != nil {
		return nil, false, err
	}
	var out []netip.Addr
	for _, r := range ranges {
		a, ok := heldBy(held, r, who)
		if !ok {
			return out, false, nil
		}
		out = append(out, a)
	}
	return out, true, nil
}
