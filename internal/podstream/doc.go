// Package podstream serves the WebSocket forms of the pod streams (exec, attach and port-forward)
// in front of an SPDY endpoint, for the API server (toward the kubelet) and for the kubelet
// (toward the container runtime's streaming server), as Kubernetes' stream translator and
// tunneling handler do:
//
//   - exec and attach over the channel protocols (v5.channel.k8s.io with its close signal,
//     v4.channel.k8s.io with exit codes as a Status, v3, v2, channel.k8s.io, base64 forms and no
//     subprotocol) are answered here and carried on to the upstream with client-go's SPDY
//     executor; the outcome is written back on the error channel (ServeExec);
//   - port-forward asked for as SPDY tunneled in WebSocket messages (SPDY/3.1+portforward.k8s.io)
//     is unwrapped: the SPDY bytes go to the upstream's SPDY upgrade unchanged (ServeTunnel).
//
// The protocol decisions (which subprotocol, which channels, what the error channel carries) are
// pure functions in protocol.go; exec.go and tunnel.go only move bytes. Errors before the upgrade
// are Kubernetes Status responses, never the bare 403 a refused WebSocket handshake would be.
//
// It must not import the API server or the kubelet: both import it (the kubelet reaches the cluster
// only through client-go).
package podstream
