package csi

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/kubelet/csi/fakecsi"
)

func TestPlanSockets(t *testing.T) {
	a := socketID{path: "/r/a.sock", inode: 1, mtime: 1}
	aAgain := socketID{path: "/r/a.sock", inode: 2, mtime: 5}
	b := socketID{path: "/r/b.sock", inode: 3, mtime: 1}
	for _, tc := range []struct {
		name       string
		registered map[socketID]string
		present    []socketID
		want       socketPlan
	}{
		{name: "nothing", want: socketPlan{}},
		{name: "new sockets register in path order", present: []socketID{b, a}, want: socketPlan{register: []socketID{a, b}}},
		{name: "registered and present: nothing to do", registered: map[socketID]string{a: "x"}, present: []socketID{a}, want: socketPlan{}},
		{name: "gone socket deregisters", registered: map[socketID]string{a: "x", b: "y"}, present: []socketID{b}, want: socketPlan{deregister: []socketID{a}}},
		{name: "a socket created again is a new registration", registered: map[socketID]string{a: "x"}, present: []socketID{aAgain}, want: socketPlan{register: []socketID{aAgain}, deregister: []socketID{a}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := planSockets(tc.registered, tc.present); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("planSockets = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSupportsCSIv1(t *testing.T) {
	for versions, want := range map[string]bool{"1.0.0": true, "v1.11.0": true, "1": true, "0.3.0": false, "2.0.0": false, "": false, "x": false} {
		if got := supportsCSIv1([]string{versions}); got != want {
			t.Errorf("supportsCSIv1(%q) = %v, want %v", versions, got, want)
		}
	}
	if !supportsCSIv1([]string{"0.3.0", "1.2.0"}) {
		t.Error("a list with one 1.x must be supported")
	}
}

func TestCSINodeDriver(t *testing.T) {
	d := &Driver{Name: "hostpath.csi.k8s.io", NodeID: "n1", MaxVolumes: 7, Topology: map[string]string{"zone": "a", "topology.hostpath.csi/node": "n1"}}
	want := storagev1.CSINodeDriver{Name: d.Name, NodeID: "n1", TopologyKeys: []string{"topology.hostpath.csi/node", "zone"}, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](7)}}
	if got := csiNodeDriver(d); !reflect.DeepEqual(got, want) {
		t.Errorf("csiNodeDriver = %+v, want %+v", got, want)
	}
	if got := csiNodeDriver(&Driver{Name: "x", NodeID: "n"}); got.Allocatable != nil || got.TopologyKeys != nil {
		t.Errorf("no limit and no topology must give neither: %+v", got)
	}
}

func TestWithDriver(t *testing.T) {
	a := storagev1.CSINodeDriver{Name: "a", NodeID: "1"}
	a2 := storagev1.CSINodeDriver{Name: "a", NodeID: "2"}
	b := storagev1.CSINodeDriver{Name: "b", NodeID: "1"}
	for _, tc := range []struct {
		name           string
		drivers        []storagev1.CSINodeDriver
		add            storagev1.CSINodeDriver
		want           []storagev1.CSINodeDriver
		changed, stale bool
	}{
		{name: "added", drivers: []storagev1.CSINodeDriver{b}, add: a, want: []storagev1.CSINodeDriver{b, a}, changed: true},
		{name: "same entry", drivers: []storagev1.CSINodeDriver{a, b}, add: a, want: []storagev1.CSINodeDriver{a, b}},
		{name: "changed entry is stale", drivers: []storagev1.CSINodeDriver{a, b}, add: a2, want: []storagev1.CSINodeDriver{b, a2}, changed: true, stale: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed, stale := withDriver(tc.drivers, tc.add)
			if !reflect.DeepEqual(got, tc.want) || changed != tc.changed || stale != tc.stale {
				t.Errorf("withDriver = %v %v %v, want %v %v %v", got, changed, stale, tc.want, tc.changed, tc.stale)
			}
		})
	}
	if out, changed := withoutDriver([]storagev1.CSINodeDriver{a, b}, "a"); !changed || !reflect.DeepEqual(out, []storagev1.CSINodeDriver{b}) {
		t.Errorf("withoutDriver = %v %v", out, changed)
	}
	if _, changed := withoutDriver([]storagev1.CSINodeDriver{b}, "a"); changed {
		t.Error("removing a driver that is not there changes nothing")
	}
}

func TestNodeWithDriver(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"zone": "a"}, Annotations: map[string]string{NodeIDAnnotation: `{"other":"o1"}`}}}
	d := &Driver{Name: "d", NodeID: "id1", Topology: map[string]string{"zone": "a", "d/node": "n"}}
	out, changed, err := nodeWithDriver(node, d)
	if err != nil || !changed {
		t.Fatalf("nodeWithDriver: %v %v", changed, err)
	}
	if got := out.Annotations[NodeIDAnnotation]; got != `{"d":"id1","other":"o1"}` {
		t.Errorf("annotation = %s", got)
	}
	if out.Labels["d/node"] != "n" || out.Labels["zone"] != "a" {
		t.Errorf("labels = %v", out.Labels)
	}
	if _, changed, _ := nodeWithDriver(out, d); changed {
		t.Error("a node with the driver already must not change")
	}
	back, changed, err := nodeWithoutDriver(out, "d")
	if err != nil || !changed || back.Annotations[NodeIDAnnotation] != `{"other":"o1"}` || back.Labels["d/node"] != "n" {
		t.Errorf("nodeWithoutDriver: %v %v %v", back.ObjectMeta, changed, err)
	}
	bad := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{NodeIDAnnotation: "{"}}}
	if _, _, err := nodeWithDriver(bad, d); err == nil {
		t.Error("a malformed annotation must be an error")
	}
}

// TestWatcherRegistersAndDeregisters runs the registration handshake with a fake driver through
// its socket in plugins_registry: CSINode, the Node's annotation and labels, the registrar told it
// is registered; then the socket goes and so does the driver.
func TestWatcherRegistersAndDeregisters(t *testing.T) {
	root := shortTempDir(t)
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}})
	drv := &fakecsi.Driver{Name: "fake.csi.test", NodeID: "fake-n1", MaxVolumes: 3, Topology: map[string]string{"topology.fake/node": "n1"},
		Capabilities: []csipb.NodeServiceCapability_RPC_Type{csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}}
	reg := filepath.Join(root, "plugins_registry", "fake-reg.sock")
	if err := drv.Start(filepath.Join(root, "plugins", "fake", "csi.sock"), reg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drv.Stop)
	w := &Watcher{Dir: filepath.Join(root, "plugins_registry"), Registry: NewRegistry(), NodeInfo: &NodeInfo{Client: client, NodeName: "n1"}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	defer w.Registry.Close()
	ctx := context.Background()
	w.Prime(ctx)

	d, ok := w.Registry.Get("fake.csi.test")
	if !ok || d.NodeID != "fake-n1" || !d.Has(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME) || d.Has(csipb.NodeServiceCapability_RPC_EXPAND_VOLUME) {
		t.Fatalf("registry: %+v %v", d, ok)
	}
	if st := drv.RegistrationStatus(); len(st) != 1 || !st[0].PluginRegistered {
		t.Errorf("registration status = %v", st)
	}
	csiNode, err := client.StorageV1().CSINodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []storagev1.CSINodeDriver{{Name: "fake.csi.test", NodeID: "fake-n1", TopologyKeys: []string{"topology.fake/node"}, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](3)}}}
	if !reflect.DeepEqual(csiNode.Spec.Drivers, want) || len(csiNode.OwnerReferences) != 1 || csiNode.OwnerReferences[0].UID != "node-uid" {
		t.Errorf("csinode = %+v", csiNode)
	}
	node, _ := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if node.Labels["topology.fake/node"] != "n1" || node.Annotations[NodeIDAnnotation] != `{"fake.csi.test":"fake-n1"}` {
		t.Errorf("node = %+v", node.ObjectMeta)
	}

	// A second listing with the same socket registers nothing again.
	w.Sync(ctx)
	if st := drv.RegistrationStatus(); len(st) != 1 {
		t.Errorf("registered again: %v", st)
	}

	if err := os.Remove(reg); err != nil {
		t.Fatal(err)
	}
	w.Sync(ctx)
	if _, ok := w.Registry.Get("fake.csi.test"); ok {
		t.Error("driver still registered after its socket went")
	}
	csiNode, _ = client.StorageV1().CSINodes().Get(ctx, "n1", metav1.GetOptions{})
	node, _ = client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if len(csiNode.Spec.Drivers) != 0 || node.Annotations[NodeIDAnnotation] != "" {
		t.Errorf("after deregistration: csinode %v, node annotations %v", csiNode.Spec.Drivers, node.Annotations)
	}
}

// TestWatcherRefusesUnsupported tells a plugin of another type, or one without CSI 1.x, that it is
// not registered.
func TestWatcherRefusesUnsupported(t *testing.T) {
	for name, drv := range map[string]*fakecsi.Driver{
		"device plugin": {Name: "dev", NodeID: "x", Type: "DevicePlugin"},
		"csi 0.3":       {Name: "old.csi", NodeID: "x", Versions: []string{"0.3.0"}},
		"no node id":    {Name: "noid.csi"},
	} {
		t.Run(name, func(t *testing.T) {
			root := shortTempDir(t)
			client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
			if err := drv.Start(filepath.Join(root, "p", "csi.sock"), filepath.Join(root, "plugins_registry", "r.sock")); err != nil {
				t.Fatal(err)
			}
			defer drv.Stop()
			w := &Watcher{Dir: filepath.Join(root, "plugins_registry"), Registry: NewRegistry(), NodeInfo: &NodeInfo{Client: client, NodeName: "n1"}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			w.Sync(context.Background())
			if names := w.Registry.Names(); len(names) != 0 {
				t.Errorf("registered %v", names)
			}
			if st := drv.RegistrationStatus(); len(st) != 1 || st[0].PluginRegistered || st[0].Error == "" {
				t.Errorf("registration status = %v", st)
			}
			// A plugin of another type is told once; a CSI driver that failed is asked again.
			w.Sync(context.Background())
			want := 2
			if drv.Type == "DevicePlugin" {
				want = 1
			}
			if st := drv.RegistrationStatus(); len(st) != want {
				t.Errorf("after a second listing: %d notifications, want %d", len(st), want)
			}
		})
	}
}

// shortTempDir is a temporary directory with a short path: a unix socket's path must fit in 108
// bytes, which t.TempDir's long names under a nested test can exceed.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
