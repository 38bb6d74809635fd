// Package policy declares policy/v1 poddisruptionbudgets with their /status subresource: validation
// of minAvailable/maxUnavailable, the selector and unhealthyPodEvictionPolicy. Eviction itself is the
// API server's. It must not import the API server or storage; table printing lives elsewhere.
package policy
