package registry

import (
	"crypto/sha256"
	"encoding/base64"
)

// StorageVersionHash is the storageVersionHash kube-apiserver shows in discovery for a resource
// whose objects are stored as group/version, kind: the first 8 bytes of the SHA-256 of
// "group/version/kind", base64-encoded. Clients are told to treat it as opaque, but upstream's own
// e2e spec recomputes it this way, and a migrator compares values across servers, so every API
// server of a cluster (and of a mixed one) must derive the same token.
func StorageVersionHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}
