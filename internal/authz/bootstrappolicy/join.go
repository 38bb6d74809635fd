package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BootstrappersGroup holds every user a bootstrap token authenticates.
const BootstrappersGroup = "system:bootstrappers"

// JoinClusterRoleBindings are the bindings kubeadm creates for kubelet TLS bootstrapping (not part
// of upstream's bootstrap policy, so skiff adds them like kubeadm does at init): a joining node may
// create and read CertificateSigningRequests, its kubelet client request is approved automatically
// (nodeclient), and a node renewing its own client certificate is too (selfnodeclient).
func JoinClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	bind := func(name, role string, s ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
		b := clusterBinding(role, s...)
		b.Name = name
		b.Annotations = nil
		return b
	}
	return []rbacv1.ClusterRoleBinding{
		bind("skiff:kubelet-bootstrap", "system:node-bootstrapper", subjects(rbacv1.GroupKind, BootstrappersGroup)...),
		bind("skiff:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", subjects(rbacv1.GroupKind, BootstrappersGroup)...),
		bind("skiff:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", subjects(rbacv1.GroupKind, NodesGroup)...),
		bind(EtcdJoinClusterRole, EtcdJoinClusterRole, subjects(rbacv1.GroupKind, ControlPlaneJoinGroup)...),
		// A joined worker runs its service proxy, cluster DNS and network policy agent as itself: it holds only its node
		// certificate (k3s likewise gives every agent its proxy's rights).
		bind("skiff:node-proxier", "system:node-proxier", subjects(rbacv1.GroupKind, NodesGroup)...),
		bind("skiff:node-dns", SkiffDNS, subjects(rbacv1.GroupKind, NodesGroup)...),
		bind("skiff:node-network-policy", SkiffNetworkPolicy, subjects(rbacv1.GroupKind, NodesGroup)...),
	}
}

// EtcdJoinClusterRole lets a control-plane join token add its node's etcd member as a learner and
// have it promoted through the API server's etcd membership endpoints (list, add, promote; not
// remove).
const EtcdJoinClusterRole = "skiff:etcd-join"

// JoinClusterRoles are the cluster roles joining needs beyond kubeadm's bindings.
func JoinClusterRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{{
		ObjectMeta: metav1.ObjectMeta{Name: EtcdJoinClusterRole},
		Rules:      rules(rule("get", "post").urls("/skiff/v1/etcd/members", "/skiff/v1/etcd/members/*")),
	}}
}

// ControlPlaneJoinGroup is the extra group of tokens that may join control-plane nodes
// (`skiff token create --control-plane`); only they may read the cluster's shared keys.
const ControlPlaneJoinGroup = "system:bootstrappers:skiff:control-plane"

// ClusterKeysSecret is the kube-system Secret with the keys every control-plane node shares
// (cluster CA certificate and key, service-account key), uploaded by `skiff token create
// --control-plane` (kubeadm's kubeadm-certs Secret plays this part).
const ClusterKeysSecret = "skiff-cluster-keys"

// ClusterInfoConfigMap is the kube-public ConfigMap with the cluster's CA bundle in a kubeconfig
// (kubeadm's cluster-info): joined nodes read it at their certificate tick to learn a CA
// rotation's bundle from the cluster.
const ClusterInfoConfigMap = "cluster-info"

// clusterInfoReader is kubeadm's Role for reading cluster-info.
const clusterInfoReader = "kubeadm:bootstrap-signer-clusterinfo"

// JoinRoles lets control-plane join tokens read the shared keys and nothing else of kube-system,
// and nodes and bootstrap tokens read cluster-info.
func JoinRoles() []rbacv1.Role {
	r := rbacv1.Role{
		ObjectMeta: nsMeta("kube-system", "skiff:control-plane-join"),
		Rules:      rules(rule("get").groups(legacyGroup).resources("secrets").names(ClusterKeysSecret)),
	}
	r.Annotations = nil
	info := rbacv1.Role{
		ObjectMeta: nsMeta("kube-public", clusterInfoReader),
		Rules:      rules(rule("get").groups(legacyGroup).resources("configmaps").names(ClusterInfoConfigMap)),
	}
	info.Annotations = nil
	return []rbacv1.Role{r, info}
}

// JoinRoleBindings gives skiff's controller manager (one identity for every controller) the
// token cleaner's kube-system Role, which upstream binds to the token-cleaner service account.
func JoinRoleBindings() []rbacv1.RoleBinding {
	b := roleBinding("kube-system", "system:controller:token-cleaner", subjects(rbacv1.UserKind, KubeControllerManager)...)
	b.Name = "skiff:kube-controller-manager:token-cleaner"
	b.Annotations = nil
	cp := roleBinding("kube-system", "skiff:control-plane-join", subjects(rbacv1.GroupKind, ControlPlaneJoinGroup)...)
	cp.Annotations = nil
	// kubeadm binds it to system:anonymous; skiff's readers are nodes and joining nodes only.
	info := roleBinding("kube-public", clusterInfoReader, subjects(rbacv1.GroupKind, NodesGroup, BootstrappersGroup)...)
	info.Annotations = nil
	return []rbacv1.RoleBinding{b, cp, info}
}
