package servicealloc_test

import (
	"context"
	"fmt"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/apiserver/store"
	"github.com/skiff-sh/skiff/internal/apiserver/store/servicealloc"
	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/builtin"
	"github.com/skiff-sh/skiff/internal/registry/core"
	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/etcd3"
)

// held counts the offsets taken in the bitmap at key.
func held(t *testing.T, ranges storage.Interface, key string) int {
	t.Helper()
	ra := &corev1.RangeAllocation{}
	if err := ranges.Get(context.Background(), key, storage.GetOptions{}, ra); err != nil {
		if storage.IsNotFound(err) {
			return 0
		}
		t.Fatal(err)
	}
	bits := new(big.Int).SetBytes(ra.Data)
	n := 0
	for i := 0; i < bits.BitLen(); i++ {
		n += int(bits.Bit(i))
	}
	return n
}

func service(name string, typ corev1.ServiceType) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type:            typ,
			Ports:           []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
			SessionAffinity: corev1.ServiceAffinityNone,
		},
	}
}

// servicesStore is the services store on a real etcd with the allocator armed, the storage
// holding the bitmaps, and the scheme (for defaulting).
func servicesStore(t *testing.T) (*store.Store, storage.Interface, *runtime.Scheme) {
	t.Helper()
	return servicesStoreFor(t, "10.43.0.0/24")
}

// servicesStoreFor is servicesStore allocating cluster IPs from serviceCIDR.
func servicesStoreFor(t *testing.T, serviceCIDR string) (*store.Store, storage.Interface, *runtime.Scheme) {
	t.Helper()
	return servicesStoreWith(t, serviceCIDR, nil)
}

// servicesStoreWith is servicesStoreFor whose allocator also hands out the addresses of extra
// (nil: none).
func servicesStoreWith(t *testing.T, serviceCIDR string, extra servicealloc.ExtraRanges) (*store.Store, storage.Interface, *runtime.Scheme) {
	t.Helper()
	member := etcdtest.StartEmbedded(t, etcdtest.Options{})
	client, err := member.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	scheme, err := builtin.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	open := func(res *registry.Resource) storage.Interface {
		codec, err := builtin.StorageCodec(scheme, res, "protobuf")
		if err != nil {
			t.Fatal(err)
		}
		return etcd3.New(client, codec, res.New, res.NewList)
	}
	_, cidr, err := net.ParseCIDR(serviceCIDR)
	if err != nil {
		t.Fatal(err)
	}
	ranges := open(servicealloc.StorageResource())
	alloc := servicealloc.New(cidr, ranges)
	if extra != nil {
		alloc.SetExtraRanges(extra)
	}
	var services *registry.Resource
	for _, res := range core.Resources() {
		if res.Plural == "services" {
			services = core.WithServiceAllocator(res, alloc)
		}
	}
	st, err := store.New(store.Config{Resource: services, Storage: open(services), Clock: clocktesting.NewFakeClock(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	return st, ranges, scheme
}

// TestAllocationThroughTheStore drives the services store on a real etcd and checks the shared
// bitmaps: a create takes what it is given, a create whose write fails and a dry run hold nothing,
// a delete gives everything back.
func TestAllocationThroughTheStore(t *testing.T) {
	st, ranges, scheme := servicesStore(t)
	ctx := context.Background()
	// Decoding applies the scheme's defaults before a handler calls the store; so does the test.
	service := func(name string, typ corev1.ServiceType) *corev1.Service {
		svc := service(name, typ)
		scheme.Default(svc)
		return svc
	}
	const ips, ports = "/registry/ranges/serviceips", "/registry/ranges/servicenodeports"
	want := func(step string, wantIPs, wantPorts int) {
		t.Helper()
		if gotIPs, gotPorts := held(t, ranges, ips), held(t, ranges, ports); gotIPs != wantIPs || gotPorts != wantPorts {
			t.Fatalf("%s: %d IPs and %d node ports held, want %d and %d", step, gotIPs, gotPorts, wantIPs, wantPorts)
		}
	}

	out, err := st.Create(ctx, service("web", corev1.ServiceTypeClusterIP), store.CreateOptions{})
	if err != nil || out.(*corev1.Service).Spec.ClusterIP == "" {
		t.Fatalf("create = %v %+v", err, out)
	}
	want("create", 1, 0)

	_, err = st.Create(ctx, service("web", corev1.ServiceTypeNodePort), store.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create of a taken name = %v, want AlreadyExists", err)
	}
	want("create whose write failed", 1, 0)

	if _, err := st.Create(ctx, service("dry", corev1.ServiceTypeNodePort), store.CreateOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	want("dry-run create", 1, 0)

	np, err := st.Create(ctx, service("np", corev1.ServiceTypeNodePort), store.CreateOptions{})
	if err != nil || np.(*corev1.Service).Spec.Ports[0].NodePort == 0 {
		t.Fatalf("create NodePort = %v %+v", err, np)
	}
	want("create NodePort", 2, 1)

	// An update that makes web a NodePort service takes a port; one that fails validation gives
	// its port back.
	invalid := out.(*corev1.Service).DeepCopy()
	invalid.Spec.Type = corev1.ServiceTypeNodePort
	invalid.Spec.SessionAffinity = "Sometimes"
	if _, _, err := st.Update(ctx, "default", "web", func(context.Context, runtime.Object) (runtime.Object, error) { return invalid, nil }, store.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("invalid update = %v, want Invalid", err)
	}
	want("update that failed validation", 2, 1)

	// A PUT of the manifest without the allocated clusterIP keeps the one the service has.
	replaced := service("web", corev1.ServiceTypeClusterIP)
	replaced.ResourceVersion = out.(*corev1.Service).ResourceVersion
	got, _, err := st.Update(ctx, "default", "web", func(context.Context, runtime.Object) (runtime.Object, error) { return replaced.DeepCopy(), nil }, store.UpdateOptions{})
	if err != nil || got.(*corev1.Service).Spec.ClusterIP != out.(*corev1.Service).Spec.ClusterIP {
		t.Fatalf("PUT without clusterIP = %v, %+v", err, got)
	}
	want("PUT without clusterIP", 2, 1)

	for _, name := range []string{"web", "np"} {
		if _, _, err := st.Delete(ctx, "default", name, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	want("delete", 0, 0)
}

// TestClusterIPsLeaveOutNetworkAndBroadcast fills a /29 (eight addresses): the six between the
// network and broadcast addresses are handed out, each once, and the seventh service is refused
// with the range full; neither end can be asked for by name either. (A service given the network
// address took the whole range's reject rule on the node as its own.)
func TestClusterIPsLeaveOutNetworkAndBroadcast(t *testing.T) {
	st, _, scheme := servicesStoreFor(t, "10.43.0.8/29")
	ctx := context.Background()
	got := map[string]bool{}
	for i := range 6 {
		svc := service(fmt.Sprintf("s%d", i), corev1.ServiceTypeClusterIP)
		scheme.Default(svc)
		out, err := st.Create(ctx, svc, store.CreateOptions{})
		if err != nil {
			t.Fatalf("service %d of 6: %v", i, err)
		}
		ip := out.(*corev1.Service).Spec.ClusterIP
		if ip == "10.43.0.8" || ip == "10.43.0.15" || got[ip] {
			t.Fatalf("service %d got %s (handed out so far: %v)", i, ip, got)
		}
		got[ip] = true
	}
	full := service("seventh", corev1.ServiceTypeClusterIP)
	scheme.Default(full)
	if _, err := st.Create(ctx, full, store.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "range is full") {
		t.Fatalf("seventh service in a /29 = %v, want the range full", err)
	}
	for _, end := range []string{"10.43.0.8", "10.43.0.15"} {
		svc := service("end", corev1.ServiceTypeClusterIP)
		svc.Spec.ClusterIP = end
		scheme.Default(svc)
		if _, err := st.Create(ctx, svc, store.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("service asking for %s = %v, want Invalid", end, err)
		}
	}
}

// TestHealthCheckNodePort follows one Service through the store: a LoadBalancer with
// externalTrafficPolicy Local gets a health-check node port from the node-port range, keeps it
// across a PUT that omits it, gives it back when the policy turns Cluster and takes a new one when
// it turns Local again; a port another Service holds is refused with 422; delete frees everything.
func TestHealthCheckNodePort(t *testing.T) {
	st, ranges, scheme := servicesStore(t)
	ctx := context.Background()
	const ports = "/registry/ranges/servicenodeports"
	lb := func(name string, policy corev1.ServiceExternalTrafficPolicy, hc int32) *corev1.Service {
		svc := service(name, corev1.ServiceTypeLoadBalancer)
		svc.Spec.ExternalTrafficPolicy = policy
		svc.Spec.HealthCheckNodePort = hc
		scheme.Default(svc)
		return svc
	}
	update := func(svc *corev1.Service) (*corev1.Service, error) {
		t.Helper()
		out, _, err := st.Update(ctx, "default", svc.Name, func(context.Context, runtime.Object) (runtime.Object, error) { return svc.DeepCopy(), nil }, store.UpdateOptions{})
		if err != nil {
			return nil, err
		}
		return out.(*corev1.Service), nil
	}

	created, err := st.Create(ctx, lb("local", corev1.ServiceExternalTrafficPolicyLocal, 0), store.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc := created.(*corev1.Service)
	hc := svc.Spec.HealthCheckNodePort
	if hc < 30000 || hc > 32767 || hc == svc.Spec.Ports[0].NodePort {
		t.Fatalf("healthCheckNodePort = %d (nodePort %d), want a distinct port of the node-port range", hc, svc.Spec.Ports[0].NodePort)
	}
	if n := held(t, ranges, ports); n != 2 {
		t.Fatalf("%d node ports held after create, want 2 (nodePort and health check)", n)
	}

	// A second Service asking for the same port is refused; one asking for a free one gets it.
	_, err = st.Create(ctx, lb("taken", corev1.ServiceExternalTrafficPolicyLocal, hc), store.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.healthCheckNodePort") || !strings.Contains(err.Error(), "already allocated") {
		t.Fatalf("create with a taken healthCheckNodePort = %v, want 422 naming spec.healthCheckNodePort", err)
	}
	if n := held(t, ranges, ports); n != 2 {
		t.Fatalf("%d node ports held after the refused create, want 2", n)
	}
	chosen := int32(32000)
	if hc == chosen || svc.Spec.Ports[0].NodePort == chosen {
		chosen = 32001
	}
	other, err := st.Create(ctx, lb("chosen", corev1.ServiceExternalTrafficPolicyLocal, chosen), store.CreateOptions{})
	if err != nil || other.(*corev1.Service).Spec.HealthCheckNodePort != chosen {
		t.Fatalf("create with a free healthCheckNodePort = %v %+v", err, other)
	}
	// A NodePort Service may not have one.
	np := service("np", corev1.ServiceTypeNodePort)
	np.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	np.Spec.HealthCheckNodePort = 32100
	scheme.Default(np)
	if _, err := st.Create(ctx, np, store.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("NodePort Service with a healthCheckNodePort = %v, want 422", err)
	}
	if n := held(t, ranges, ports); n != 4 {
		t.Fatalf("%d node ports held, want 4 (two Services with a nodePort and a health check each)", n)
	}

	// A PUT of the manifest without it keeps it; changing it is refused.
	put := lb("local", corev1.ServiceExternalTrafficPolicyLocal, 0)
	put.ResourceVersion = svc.ResourceVersion
	put.Spec.Ports[0].NodePort = svc.Spec.Ports[0].NodePort
	if svc, err = update(put); err != nil || svc.Spec.HealthCheckNodePort != hc {
		t.Fatalf("PUT without healthCheckNodePort = %v %+v, want it kept (%d)", err, svc, hc)
	}
	changed := svc.DeepCopy()
	changed.Spec.HealthCheckNodePort = chosen + 1
	if _, err := update(changed); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "immutable") {
		t.Fatalf("changing healthCheckNodePort = %v, want 422 field is immutable", err)
	}

	// Policy Cluster gives it back; Local again takes one.
	cluster := svc.DeepCopy()
	cluster.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	if svc, err = update(cluster); err != nil || svc.Spec.HealthCheckNodePort != 0 {
		t.Fatalf("update to policy Cluster = %v %+v, want healthCheckNodePort cleared", err, svc)
	}
	if n := held(t, ranges, ports); n != 3 {
		t.Fatalf("%d node ports held after policy Cluster, want 3", n)
	}
	local := svc.DeepCopy()
	local.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	if svc, err = update(local); err != nil || svc.Spec.HealthCheckNodePort == 0 {
		t.Fatalf("update to policy Local = %v %+v, want a healthCheckNodePort", err, svc)
	}
	if n := held(t, ranges, ports); n != 4 {
		t.Fatalf("%d node ports held after policy Local again, want 4", n)
	}

	for _, name := range []string{"local", "chosen"} {
		if _, _, err := st.Delete(ctx, "default", name, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := held(t, ranges, ports); n != 0 {
		t.Fatalf("%d node ports held after delete, want 0", n)
	}
}

// TestUpdateReservesChangedNodePorts: an update that names another node port reserves it as a
// create would: out of the range or taken is refused (422, the port unchanged), a free one is
// held and the old one given back.
func TestUpdateReservesChangedNodePorts(t *testing.T) {
	st, ranges, scheme := servicesStore(t)
	ctx := context.Background()
	const ports = "/registry/ranges/servicenodeports"
	a, b := createNodePort(t, st, scheme, "a"), createNodePort(t, st, scheme, "b")
	withPort := func(svc *corev1.Service, port int32) error {
		_, _, err := st.Update(ctx, "default", svc.Name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
			next := cur.(*corev1.Service).DeepCopy()
			next.Spec.Ports[0].NodePort = port
			return next, nil
		}, store.UpdateOptions{})
		return err
	}
	for _, tc := range []struct {
		port int32
		want string
	}{
		{29999, "provided port is not in the valid range"},
		{40000, "provided port is not in the valid range"},
		{b.Spec.Ports[0].NodePort, "provided port is already allocated"},
	} {
		err := withPort(a, tc.port)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), fmt.Sprint(tc.port)) {
			t.Errorf("nodePort %d: %v, want 422: %s", tc.port, err, tc.want)
		}
	}
	if n := held(t, ranges, ports); n != 2 {
		t.Fatalf("%d node ports held after the refused updates, want 2", n)
	}
	free := int32(32000)
	for free == a.Spec.Ports[0].NodePort || free == b.Spec.Ports[0].NodePort {
		free++
	}
	if err := withPort(a, free); err != nil {
		t.Fatalf("nodePort %d (free): %v", free, err)
	}
	if n := held(t, ranges, ports); n != 2 {
		t.Fatalf("%d node ports held after moving a's port, want 2 (the old one given back)", n)
	}
	// Another Service cannot take the port a now holds, and may take the one it gave back.
	if err := withPort(b, free); !apierrors.IsInvalid(err) {
		t.Fatalf("b taking a's new port: %v, want 422", err)
	}
	if err := withPort(b, a.Spec.Ports[0].NodePort); err != nil {
		t.Fatalf("b taking the port a gave back: %v", err)
	}
}
