// Package inprocess carries a client-go client's requests to the API server's handler in the same
// process: the controller manager, scheduler, kubelet and the other components of a control-plane
// node call the handler directly instead of dialing their own API server over loopback.
//
// What it saves is the transport, on both ends: the TCP connection and its syscalls, TLS
// encryption and decryption, HTTP/2 framing and header compression, and the goroutines that read
// and write the connection. What it keeps is everything the API server does with a request:
// authentication (the component's client certificate is presented as a TLS handshake would have
// verified it, and the authenticator checks it against the cluster CA as for any caller),
// authorization, admission, priority and fairness, audit and metrics. A component on a node without
// the API server keeps using the network.
//
// Responses stream through a pipe, so watches and chunked lists work; connection upgrades (exec,
// attach, port-forward) do not, and no component of a skiff node makes them.
package inprocess
