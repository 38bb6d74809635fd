// Package builtin assembles the built-in resources of every group into one scheme and one resource
// list, and wires the pieces the group packages deliberately do not import from each other (the core
// group's pod-template rules for workloads, table printers, the shared storage of events and of horizontal pod autoscalers).
package builtin
