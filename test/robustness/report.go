package robustness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Summary is one line for the log and the README table.
func (r Report) Summary() string {
	s := fmt.Sprintf("%d calls (%d writes), %d watch streams with %d events, %d LISTs, %d control-plane object versions",
		r.Ops, r.Writes, r.Watches, r.Events, r.Lists, r.Objects)
	if r.Discarded > 0 {
		s += fmt.Sprintf(", %d acknowledged writes discarded by restores from a snapshot", r.Discarded)
	}
	return s + fmt.Sprintf(": %d violations", len(r.Violations))
}

// WriteReport keeps what a failing run needs to be understood: the history (JSON), the
// violations (text) and porcupine's visualization of each object whose calls have no
// linearization. It returns the files written.
func WriteReport(dir string, h *History, r Report) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report dir: %w", err)
	}
	hist := filepath.Join(dir, "history.json")
	if err := h.Save(hist); err != nil {
		return nil, err
	}
	files := []string{hist}
	var b strings.Builder
	fmt.Fprintf(&b, "scenario %s: %s\n", h.Scenario, r.Summary())
	for _, f := range h.Faults {
		fmt.Fprintf(&b, "fault %s at %.1fs-%.1fs %s\n", f.Name, float64(f.Start)/1e9, float64(f.End)/1e9, f.Error)
	}
	for _, v := range r.Violations {
		fmt.Fprintln(&b, v)
	}
	text := filepath.Join(dir, "violations.txt")
	if err := os.WriteFile(text, []byte(b.String()), 0o644); err != nil {
		return nil, fmt.Errorf("write violations: %w", err)
	}
	files = append(files, text)
	for _, l := range r.Linearizability {
		if l.Result != porcupine.Illegal {
			continue
		}
		name := l.Key
		if l.Epoch > 0 {
			name = fmt.Sprintf("%s-epoch%d", l.Key, l.Epoch)
		}
		path := filepath.Join(dir, "linearizability-"+name+".html")
		if err := porcupine.VisualizePath(registerModelFrom(l.Init), l.Info, path); err != nil {
			return nil, fmt.Errorf("visualize %s: %w", l.Key, err)
		}
		files = append(files, path)
	}
	return files, nil
}

// KeepLogs copies the log of every node and of the external etcd into dir/logs, so that a
// failed run can be read after its temporary directories are gone (the external etcd of one run
// exited after a resume, and its log went with it).
func KeepLogs(dir string, c *Cluster) ([]string, error) {
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, fmt.Errorf("logs dir: %w", err)
	}
	sources := map[string]string{}
	for _, n := range append(append([]*Node(nil), c.Nodes...), c.Workers...) {
		sources[n.Name+".log"] = filepath.Join(n.DataDir, "skiff.log")
	}
	if c.External != nil {
		sources["external-etcd.log"] = filepath.Join(c.External.DataDir, "etcd.log")
	}
	var kept []string
	var errs []error
	for name, src := range sources {
		data, err := os.ReadFile(src)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		dst := filepath.Join(logs, name)
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			errs = append(errs, err)
			continue
		}
		kept = append(kept, dst)
	}
	sort.Strings(kept)
	return kept, errors.Join(errs...)
}
