package storage

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// continueToken is the opaque list continuation Kubernetes clients pass back: the revision the
// first page was read at and the key (relative to the list prefix) the next page starts at.
// The JSON field names and base64 form match Kubernetes' own tokens.
type continueToken struct {
	APIVersion string `json:"v"`
	// ResourceVersion of the first page; -1 continues at the latest revision (after compaction).
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

const continueTokenVersion = "meta.k8s.io/v1"

// EncodeContinue makes the continue token of a list page read at rev whose next page starts at
// nextKey (under keyPrefix). The etcd store and the watch cache both make and read these tokens,
// so a page served by one continues in the other.
func EncodeContinue(nextKey, keyPrefix string, rev int64) (string, error) {
	if !strings.HasPrefix(nextKey, keyPrefix) {
		return "", fmt.Errorf("continue key %q is outside the list prefix %q", nextKey, keyPrefix)
	}
	out, err := json.Marshal(continueToken{
		APIVersion:      continueTokenVersion,
		ResourceVersion: rev,
		StartKey:        strings.TrimPrefix(nextKey, keyPrefix),
	})
	if err != nil {
		return "", fmt.Errorf("encode continue token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(out), nil
}

// DecodeContinue returns the full key to resume at and the revision to read at.
func DecodeContinue(token, keyPrefix string) (string, int64, error) {
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, fmt.Errorf("continue key is not valid: %w", err)
	}
	var c continueToken
	if err := json.Unmarshal(data, &c); err != nil {
		return "", 0, fmt.Errorf("continue key is not valid: %w", err)
	}
	if c.APIVersion != continueTokenVersion {
		return "", 0, fmt.Errorf("continue key is not valid: server does not recognize this encoding (%q)", c.APIVersion)
	}
	if c.ResourceVersion == 0 || c.ResourceVersion < -1 {
		return "", 0, errors.New("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	}
	if c.StartKey == "" {
		return "", 0, errors.New("continue key is not valid: encoded start key empty (version meta.k8s.io/v1)")
	}
	// The start key is appended to the prefix: it must not climb out of it.
	if strings.HasPrefix(c.StartKey, "/") {
		return "", 0, errors.New("continue key is not valid: invalid start key")
	}
	for _, segment := range strings.Split(c.StartKey, "/") {
		if segment == "." || segment == ".." {
			return "", 0, errors.New("continue key is not valid: invalid start key")
		}
	}
	return keyPrefix + c.StartKey, c.ResourceVersion, nil
}
