package servicealloc_test

import (
	"context"
	"math/big"
	"net"
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

// TestAllocationThroughTheStore drives the services store on a real etcd and checks the shared
// bitmaps: a create takes what it is given, a create whose write fails and a dry run hold nothing,
// a delete gives everything back.
func TestAllocationThroughTheStore(t *testing.T) {
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
	_, cidr, _ := net.ParseCIDR("10.43.0.0/24")
	ranges := open(servicealloc.StorageResource())
	alloc := servicealloc.New(cidr, ranges)
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
