package robustness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Network partitions. The nodes share the loopback interface, and a connection one node opens to
// another leaves from 127.0.0.1 (the kernel's source for every loopback route), so addresses can't
// tell the nodes' traffic apart. Each node instead runs in its own cgroup (v2), and nftables tells
// the sides apart by the cgroup of the socket: a rule on output marks every packet a node's
// sockets send, and a rule on input drops a marked packet whose receiving socket belongs to a node
// on the other side of the cut. The test's own clients belong to no node, so they still reach
// every node, as clients on the node's side of a partition would. The rules live in a table of
// their own, named for the test process and the fault, created when a partition starts and
// deleted when it ends (and at cleanup); the suite touches no other table.

// nftCgroupBase is where nft looks up the cgroup paths its rules name.
const nftCgroupBase = "/sys/fs/cgroup"

// partitionMark is the packet mark of node i's packets while a partition is in place: a value
// whose low 16 bits hold only the index, clear of the bits kube-proxy and skiff's own rules use.
func partitionMark(i int) uint32 { return 0x52420000 | uint32(i+1) }

// CgroupRef names a node's cgroup as nft's `socket cgroupv2` matches it.
type CgroupRef struct {
	// Path is relative to /sys/fs/cgroup; Level is its depth in the cgroup2 hierarchy.
	Path  string
	Level int
}

// PartitionPlan is one partition: Target cut off from every other node, both ways or (OneWay)
// only what Target sends.
type PartitionPlan struct {
	Table  string
	Nodes  []CgroupRef
	Target int
	OneWay bool
}

// partitionScript renders the nft script that puts p in place: a pure function of the plan.
func partitionScript(p PartitionPlan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {\n\tchain out {\n\t\ttype filter hook output priority filter; policy accept;\n", p.Table)
	for i, n := range p.Nodes {
		fmt.Fprintf(&b, "\t\tsocket cgroupv2 level %d %q meta mark set 0x%08x\n", n.Level, n.Path, partitionMark(i))
	}
	fmt.Fprintf(&b, "\t}\n\tchain in {\n\t\ttype filter hook input priority filter; policy accept;\n")
	for i, n := range p.Nodes {
		if i == p.Target {
			continue
		}
		// What the target sends to the others; and, both ways, what they send to it.
		fmt.Fprintf(&b, "\t\tmeta mark 0x%08x socket cgroupv2 level %d %q drop\n", partitionMark(p.Target), n.Level, n.Path)
		if !p.OneWay {
			t := p.Nodes[p.Target]
			fmt.Fprintf(&b, "\t\tmeta mark 0x%08x socket cgroupv2 level %d %q drop\n", partitionMark(i), t.Level, t.Path)
		}
	}
	b.WriteString("\t}\n}\n")
	return b.String()
}

// Cgroups is the cgroup a run creates for its nodes: one directory at the top of the cgroup2
// hierarchy, one child per node.
type Cgroups struct {
	mount, dir string
}

// NewCgroups creates name at the top of the cgroup2 hierarchy.
func NewCgroups(name string) (*Cgroups, error) {
	mount, err := cgroup2Mount()
	if err != nil {
		return nil, err
	}
	if mount != nftCgroupBase && !strings.HasPrefix(mount, nftCgroupBase+"/") {
		return nil, fmt.Errorf("cgroup2 is mounted at %s, outside %s where nft looks up cgroups", mount, nftCgroupBase)
	}
	dir := filepath.Join(mount, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup: %w", err)
	}
	return &Cgroups{mount: mount, dir: dir}, nil
}

// Node creates the cgroup of one node and returns its directory.
func (c *Cgroups) Node(name string) (string, error) {
	dir := filepath.Join(c.dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("create cgroup: %w", err)
	}
	return dir, nil
}

// Ref is how nft names a cgroup directory.
func (c *Cgroups) Ref(dir string) CgroupRef {
	rel, _ := filepath.Rel(nftCgroupBase, dir)
	inMount, _ := filepath.Rel(c.mount, dir)
	return CgroupRef{Path: rel, Level: len(strings.Split(inMount, "/"))}
}

// Remove deletes the cgroups, once their processes have exited.
func (c *Cgroups) Remove() error {
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return fmt.Errorf("read cgroup: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			errs = append(errs, os.Remove(filepath.Join(c.dir, e.Name())))
		}
	}
	errs = append(errs, os.Remove(c.dir))
	return errors.Join(errs...)
}

// cgroup2Mount is where the cgroup2 hierarchy is mounted, from /proc/self/mountinfo.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("mountinfo: %w", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if mount, ok := cgroup2MountOf(s.Text()); ok {
			return mount, nil
		}
	}
	return "", errors.New("no cgroup2 hierarchy mounted")
}

// cgroup2MountOf reads one mountinfo line: the mount point if its filesystem is cgroup2.
func cgroup2MountOf(line string) (string, bool) {
	fields := strings.Fields(line)
	for i, f := range fields {
		if f == "-" && i+1 < len(fields) && i >= 5 {
			return fields[4], fields[i+1] == "cgroup2"
		}
	}
	return "", false
}

// Partitions puts partitions in place with nft and takes them away, remembering the tables it
// created so that a cleanup removes what a failed run left.
type Partitions struct {
	mu     sync.Mutex
	prefix string
	n      int
	tables map[string]bool
}

// NewPartitions names its tables prefix-<n>.
func NewPartitions(prefix string) *Partitions {
	return &Partitions{prefix: prefix, tables: map[string]bool{}}
}

// Cut puts p in place (its Table is filled in) and returns the table's name.
func (ps *Partitions) Cut(ctx context.Context, p PartitionPlan) (string, error) {
	ps.mu.Lock()
	ps.n++
	p.Table = fmt.Sprintf("%s-%d", ps.prefix, ps.n)
	ps.tables[p.Table] = true
	ps.mu.Unlock()
	cmd := exec.CommandContext(ctx, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(partitionScript(p))
	if out, err := cmd.CombinedOutput(); err != nil {
		return p.Table, fmt.Errorf("nft partition %s: %w: %s", p.Table, err, out)
	}
	return p.Table, nil
}

// Heal deletes table, which Cut created.
func (ps *Partitions) Heal(table string) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !ps.tables[table] {
		return nil
	}
	out, err := exec.Command("nft", "delete", "table", "inet", table).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "No such file") {
		return fmt.Errorf("nft delete table %s: %w: %s", table, err, out)
	}
	delete(ps.tables, table)
	return nil
}

// HealAll deletes every table still in place.
func (ps *Partitions) HealAll() error {
	ps.mu.Lock()
	var tables []string
	for t := range ps.tables {
		tables = append(tables, t)
	}
	ps.mu.Unlock()
	var errs []error
	for _, t := range tables {
		errs = append(errs, ps.Heal(t))
	}
	return errors.Join(errs...)
}
