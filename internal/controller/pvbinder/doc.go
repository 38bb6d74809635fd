// Package pvbinder binds PersistentVolumeClaims to PersistentVolumes, as Kubernetes' persistent
// volume controller does for statically provisioned volumes: a pending claim gets the smallest
// available volume of its storage class that offers its access modes, volume mode and capacity (or
// the volume it names), and both sides are marked Bound. Claims of a WaitForFirstConsumer class are
// bound only to a volume already pointed at them (by the scheduler's VolumeBinding, or provisioned
// for them), as Kubernetes delays their binding until a pod picks a node. It reaches the cluster
// only through client-go and does not provision volumes (localpath does).
package pvbinder
