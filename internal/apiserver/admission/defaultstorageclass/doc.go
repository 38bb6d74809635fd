// Package defaultstorageclass is Kubernetes' DefaultStorageClass admission plugin: a claim created
// without spec.storageClassName gets the cluster's default StorageClass (annotated
// storageclass.kubernetes.io/is-default-class, or the beta key, "true"). An explicit "" asks for no
// class and is left alone; with several defaults the newest wins, then the first by name, as
// upstream. A server that does not serve StorageClasses gives no default.
package defaultstorageclass
