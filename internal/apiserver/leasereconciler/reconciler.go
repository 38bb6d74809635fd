package leasereconciler

//lint:file-ignore SA1019 core/v1 Endpoints are deprecated, not removed: Kubernetes still serves them and so does skiff.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	coordinationv1 "k8s.io/api/coordination/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// MasterLeasePrefix is the etcd key prefix of the master leases.
const MasterLeasePrefix = "/registry/masterleases/"

// Config configures one API server's reconciler.
type Config struct {
	Etcd   *clientv3.Client
	Client kubernetes.Interface
	// Identity names this API server (the node name); HolderIdentity is written in its Lease.
	Identity, HolderIdentity string
	// IP and Port are the server's advertise address and HTTPS port: its entry in the endpoints.
	IP   string
	Port int32
	// MasterLeaseTTL is how long a master lease outlives its server (default 15s, as upstream);
	// it is refreshed every third of that.
	MasterLeaseTTL time.Duration
	// IdentityLeaseDuration (default 3600s) and IdentityRenewInterval (default 10s) are those of
	// upstream's API server identity Leases.
	IdentityLeaseDuration, IdentityRenewInterval time.Duration
	Clock                                        clock.WithTicker
	Logger                                       *slog.Logger
	// Annotations, when set, are written on the identity Lease at each renewal: what this API
	// server wants its peers to see (the encryption configuration it has in force). An empty
	// value removes the annotation.
	Annotations func() map[string]string
	// RenewNow renews the identity Lease at once (the annotations changed) rather than at the
	// next interval.
	RenewNow <-chan struct{}
}

func (c *Config) defaults() {
	if c.MasterLeaseTTL <= 0 {
		c.MasterLeaseTTL = 15 * time.Second
	}
	if c.IdentityLeaseDuration <= 0 {
		c.IdentityLeaseDuration = time.Hour
	}
	if c.IdentityRenewInterval <= 0 {
		c.IdentityRenewInterval = 10 * time.Second
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.HolderIdentity == "" {
		c.HolderIdentity = c.Identity
	}
}

// masterLease is the value of a master lease key.
type masterLease struct {
	IP   string `json:"ip"`
	Port int32  `json:"port"`
}

// Run keeps this server's master and identity leases and the endpoints until ctx ends; then it
// removes its master lease and rewrites the endpoints without itself.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	log := cfg.Logger.With("component", "endpoint-reconciler", "namespace", metav1.NamespaceDefault, "name", ServiceName)
	participates := Endpointable(net.ParseIP(cfg.IP))
	if !participates {
		log.Info("advertise address cannot be an endpoint; this API server is not listed in the kubernetes endpoints", "address", cfg.IP)
	}
	key := MasterLeasePrefix + cfg.IP
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	changed := cfg.Etcd.Watch(watchCtx, MasterLeasePrefix, clientv3.WithPrefix())
	refresh := cfg.Clock.NewTicker(cfg.MasterLeaseTTL / 3)
	defer refresh.Stop()
	renew := cfg.Clock.NewTicker(cfg.IdentityRenewInterval)
	defer renew.Stop()

	r := &reconciler{cfg: cfg, log: log, key: key}
	if err := r.renewIdentity(ctx); err != nil {
		log.Warn("renew API server identity lease", "err", err)
	}
	for {
		if participates {
			if err := r.putMasterLease(ctx); err != nil && ctx.Err() == nil {
				log.Warn("refresh master lease", "err", err)
			}
		}
		if err := r.reconcile(ctx, ""); err != nil && ctx.Err() == nil {
			log.Warn("reconcile kubernetes endpoints", "err", err)
		}
		select {
		case <-ctx.Done():
			if err := r.remove(participates); err != nil {
				log.Warn("could not remove this API server from the kubernetes endpoints; it drops out when its master lease expires", "err", err)
			}
			return nil
		case <-refresh.C():
		case <-cfg.RenewNow:
			if err := r.renewIdentity(ctx); err != nil && ctx.Err() == nil {
				log.Warn("renew API server identity lease", "err", err)
			}
		case <-renew.C():
			if err := r.renewIdentity(ctx); err != nil && ctx.Err() == nil {
				log.Warn("renew API server identity lease", "err", err)
			}
			if err := r.collectIdentityLeases(ctx); err != nil && ctx.Err() == nil {
				log.Warn("delete expired API server identity leases", "err", err)
			}
		case resp, ok := <-changed:
			if !ok || resp.Err() != nil {
				// The watch ended (compaction, a lost connection): open it again.
				changed = cfg.Etcd.Watch(watchCtx, MasterLeasePrefix, clientv3.WithPrefix())
			}
		}
	}
}

type reconciler struct {
	cfg Config
	log *slog.Logger
	key string
}

// putMasterLease writes this server's key under a fresh etcd lease of the TTL; the previous lease
// expires by itself.
func (r *reconciler) putMasterLease(ctx context.Context) error {
	lease, err := r.cfg.Etcd.Grant(ctx, int64(r.cfg.MasterLeaseTTL/time.Second))
	if err != nil {
		return fmt.Errorf("grant etcd lease: %w", err)
	}
	val, err := json.Marshal(masterLease{IP: r.cfg.IP, Port: r.cfg.Port})
	if err != nil {
		return err
	}
	if _, err := r.cfg.Etcd.Put(ctx, r.key, string(val), clientv3.WithLease(lease.ID)); err != nil {
		return fmt.Errorf("put %s: %w", r.key, err)
	}
	return nil
}

// liveIPs lists the IPs of the master leases in etcd, less exclude.
func (r *reconciler) liveIPs(ctx context.Context, exclude string) ([]string, error) {
	resp, err := r.cfg.Etcd.Get(ctx, MasterLeasePrefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list master leases: %w", err)
	}
	var ips []string
	for _, kv := range resp.Kvs {
		var ml masterLease
		if err := json.Unmarshal(kv.Value, &ml); err != nil {
			r.log.Warn("ignoring a master lease that does not parse", "key", string(kv.Key), "err", err)
			continue
		}
		if ml.IP != exclude {
			ips = append(ips, ml.IP)
		}
	}
	return ips, nil
}

// reconcile writes the endpoints from the live master leases (less exclude). With no live server
// listable it leaves them alone: nothing better is known.
func (r *reconciler) reconcile(ctx context.Context, exclude string) error {
	ips, err := r.liveIPs(ctx, exclude)
	if err != nil {
		return err
	}
	addrs := Desired(ips)
	if len(addrs) == 0 && exclude == "" {
		return nil
	}
	return errors.Join(r.writeEndpoints(ctx, addrs), r.writeSlice(ctx, addrs))
}

func (r *reconciler) writeEndpoints(ctx context.Context, addrs []string) error {
	want := Endpoints(addrs, r.cfg.Port)
	eps := r.cfg.Client.CoreV1().Endpoints(metav1.NamespaceDefault)
	cur, err := eps.Get(ctx, ServiceName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if len(addrs) == 0 {
			return nil
		}
		_, err = eps.Create(ctx, want, metav1.CreateOptions{})
		if err == nil {
			r.log.Info("kubernetes endpoints created", "addresses", addrs)
		}
		return ignoreConflict(err)
	}
	if err != nil {
		return fmt.Errorf("get endpoints: %w", err)
	}
	if !EndpointsNeedUpdate(cur, want) {
		return nil
	}
	upd := cur.DeepCopy()
	upd.Subsets = want.Subsets
	if upd.Labels == nil {
		upd.Labels = map[string]string{}
	}
	upd.Labels[skipMirror] = "true"
	if _, err := eps.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return ignoreConflict(fmt.Errorf("update endpoints: %w", err))
	}
	r.log.Info("kubernetes endpoints updated", "addresses", addrs)
	return nil
}

func (r *reconciler) writeSlice(ctx context.Context, addrs []string) error {
	want := EndpointSlice(addrs, r.cfg.Port)
	slices := r.cfg.Client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault)
	cur, err := slices.Get(ctx, ServiceName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if len(addrs) == 0 {
			return nil
		}
		_, err = slices.Create(ctx, want, metav1.CreateOptions{})
		return ignoreConflict(err)
	}
	if err != nil {
		return fmt.Errorf("get endpointslice: %w", err)
	}
	if !SliceNeedsUpdate(cur, want) {
		return nil
	}
	upd := cur.DeepCopy()
	upd.AddressType, upd.Ports, upd.Endpoints = want.AddressType, want.Ports, want.Endpoints
	if upd.Labels == nil {
		upd.Labels = map[string]string{}
	}
	upd.Labels[discoveryv1.LabelServiceName] = ServiceName
	if _, err := slices.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return ignoreConflict(fmt.Errorf("update endpointslice: %w", err))
	}
	return nil
}

// ignoreConflict drops write races with another API server reconciling the same objects: the next
// round reads again.
func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// remove deletes this server's master lease and rewrites the endpoints without it, on a context of
// its own (the run's has ended), before the API server stops serving.
func (r *reconciler) remove(participates bool) error {
	if !participates {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.cfg.Etcd.Delete(ctx, r.key); err != nil {
		return fmt.Errorf("remove master lease %s: %w", r.key, err)
	}
	if err := r.reconcile(ctx, r.cfg.IP); err != nil {
		return fmt.Errorf("remove this API server from the kubernetes endpoints: %w", err)
	}
	r.log.Info("removed this API server from the kubernetes endpoints", "address", r.cfg.IP)
	return nil
}

// renewIdentity creates or renews kube-system/apiserver-<hash>.
func (r *reconciler) renewIdentity(ctx context.Context) error {
	leases := r.cfg.Client.CoordinationV1().Leases(metav1.NamespaceSystem)
	name := IdentityLeaseName(r.cfg.Identity)
	now := metav1.NewMicroTime(r.cfg.Clock.Now())
	cur, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem,
				Labels: map[string]string{IdentityLabel: "kube-apiserver", "kubernetes.io/hostname": r.cfg.Identity}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(r.cfg.HolderIdentity),
				LeaseDurationSeconds: ptr.To(int32(r.cfg.IdentityLeaseDuration / time.Second)),
				AcquireTime:          &now,
				RenewTime:            &now,
			},
		}
		r.annotate(&l.ObjectMeta)
		_, err = leases.Create(ctx, l, metav1.CreateOptions{})
		return ignoreConflict(err)
	}
	if err != nil {
		return fmt.Errorf("get lease %s: %w", name, err)
	}
	upd := cur.DeepCopy()
	upd.Spec.HolderIdentity = ptr.To(r.cfg.HolderIdentity)
	upd.Spec.LeaseDurationSeconds = ptr.To(int32(r.cfg.IdentityLeaseDuration / time.Second))
	upd.Spec.RenewTime = &now
	r.annotate(&upd.ObjectMeta)
	_, err = leases.Update(ctx, upd, metav1.UpdateOptions{})
	return ignoreConflict(err)
}

// annotate puts the configured annotations on the identity Lease.
func (r *reconciler) annotate(meta *metav1.ObjectMeta) {
	if r.cfg.Annotations == nil {
		return
	}
	for k, v := range r.cfg.Annotations() {
		if v == "" {
			delete(meta.Annotations, k)
			continue
		}
		if meta.Annotations == nil {
			meta.Annotations = map[string]string{}
		}
		meta.Annotations[k] = v
	}
}

// collectIdentityLeases deletes the identity Leases of API servers gone for longer than their
// duration, as upstream's identity lease garbage collector does.
func (r *reconciler) collectIdentityLeases(ctx context.Context) error {
	leases := r.cfg.Client.CoordinationV1().Leases(metav1.NamespaceSystem)
	list, err := leases.List(ctx, metav1.ListOptions{LabelSelector: IdentityLabel + "=kube-apiserver"})
	if err != nil {
		return fmt.Errorf("list identity leases: %w", err)
	}
	for _, name := range ExpiredIdentityLeases(list.Items, r.cfg.Clock.Now()) {
		if name == IdentityLeaseName(r.cfg.Identity) {
			continue
		}
		if err := leases.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete lease %s: %w", name, err)
		}
		r.log.Info("deleted the identity lease of an API server gone", "lease", name)
	}
	return nil
}
