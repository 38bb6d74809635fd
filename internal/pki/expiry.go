package pki

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// RenewWithin is how close to its expiry skiff renews a certificate it issues itself (EnsureLeaf)
// and warns about any other.
const RenewWithin = 30 * 24 * time.Hour

// CertExpiry is one certificate file and when it expires.
type CertExpiry struct {
	// Name is the file name without .crt (ca, apiserver, kubelet, ...).
	Name     string    `json:"name"`
	Path     string    `json:"path"`
	NotAfter time.Time `json:"notAfter"`
	// Error says why the file could not be read (the other fields but Name and Path are empty).
	Error string `json:"error,omitempty"`
}

// ReadExpiries reads the expiry of every certificate (*.crt) in dir, sorted by name. An absent
// dir has none; an unreadable or damaged file is listed with its error.
func ReadExpiries(dir string) ([]CertExpiry, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.crt"))
	if err != nil {
		return nil, fmt.Errorf("list certificates in %s: %w", dir, err)
	}
	out := make([]CertExpiry, 0, len(paths))
	for _, p := range paths {
		e := CertExpiry{Name: strings.TrimSuffix(filepath.Base(p), ".crt"), Path: p}
		data, err := os.ReadFile(p)
		if err == nil {
			c, perr := ParseCertificate(data)
			if perr != nil {
				err = perr
			} else {
				e.NotAfter = c.NotAfter
			}
		}
		if err != nil {
			e.Error = err.Error()
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b CertExpiry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ExpiryCheck is what one check of a node's certificates found.
type ExpiryCheck struct {
	// Expiring are the certificates that expire within the window (or have expired).
	Expiring []CertExpiry
	// Renewed are the certificates whose expiry moved later since the previous check.
	Renewed []CertExpiry
	// Damaged are the files that could not be read.
	Damaged []CertExpiry
}

// CheckExpiries compares two readings of the same directory (pure): what expires within window
// of now in the current one, and what was renewed between them.
func CheckExpiries(previous, current []CertExpiry, now time.Time, window time.Duration) ExpiryCheck {
	var out ExpiryCheck
	before := map[string]time.Time{}
	for _, p := range previous {
		if p.Error == "" {
			before[p.Path] = p.NotAfter
		}
	}
	for _, c := range current {
		if c.Error != "" {
			out.Damaged = append(out.Damaged, c)
			continue
		}
		if !now.Add(window).Before(c.NotAfter) {
			out.Expiring = append(out.Expiring, c)
		}
		if old, ok := before[c.Path]; ok && c.NotAfter.After(old) {
			out.Renewed = append(out.Renewed, c)
		}
	}
	return out
}
