// Package manifests is the auto-deployed manifests directory of control-plane nodes (k3s's
// server/manifests): every YAML or JSON file in it is applied with server-side apply under the
// field manager skiff-deploy, re-applied when it changes, and the objects of a file that is removed
// (or no longer names them) are deleted, found by the label manifests.skiff.sh/file that names
// their file.
//
// The decision is pure: Parse turns a file's bytes into objects with content hashes, and Decide
// turns the files and the labelled objects in the cluster into a Plan (apply these, in kind order,
// prune those). Runner is the thin I/O around it: it polls the directory, lists the labelled
// objects through the dynamic client and a discovery RESTMapper, carries the plan out, and
// reports each file's state in the ConfigMap kube-system/skiff-manifests and as Events on it.
// One control plane at a time runs it, holding the Lease kube-system/skiff-manifests.
//
// It must not reach the cluster other than through client-go, and a bad file must never stop
// it: a file that does not parse is reported and its objects are left as they were.
package manifests
