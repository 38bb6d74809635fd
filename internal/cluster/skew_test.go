package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	skiffversion "github.com/skiff-sh/skiff/internal/version"
)

func TestCheckSkew(t *testing.T) {
	cp := func(v string) skewSelf { return skewSelf{Version: v, DataFormat: 1, ControlPlane: true} }
	worker := func(v string) skewSelf { return skewSelf{Version: v, DataFormat: 1} }
	rec := func(v string, format int) *dataDirRecord {
		return &dataDirRecord{KubernetesVersion: v, DataFormat: format}
	}
	for _, tc := range []struct {
		name string
		self skewSelf
		c    skewCluster
		// want is "" (allowed) or words the refusal must hold.
		want []string
	}{
		{name: "first start: nothing recorded, nobody to ask", self: cp("v1.33.0+skiff")},
		{name: "restart on the same version", self: cp("v1.33.0+skiff"), c: skewCluster{DataDirRec: rec("v1.33.0+skiff", 1)}},
		{name: "data dir from before records (format 1, no version)", self: cp("v1.33.0+skiff"), c: skewCluster{DataDirRec: rec("", 1)}},
		{name: "patch downgrade of a data dir", self: cp("v1.33.0+skiff"), c: skewCluster{DataDirRec: rec("v1.33.4+skiff", 1)}},
		{name: "one-minor upgrade of a control plane's data dir", self: cp("v1.34.0+skiff"), c: skewCluster{DataDirRec: rec("v1.33.2+skiff", 1)}},
		{name: "data dir written by a newer minor", self: cp("v1.31.0+skiff"), c: skewCluster{DataDir: "/d", DataDirRec: rec("v1.33.0+skiff", 1)},
			want: []string{"this skiff is v1.31.0+skiff, data dir /d was last written by v1.33.0+skiff", "never downgraded", "left untouched"}},
		{name: "worker data dir written by a newer minor", self: worker("v1.32.0+skiff"), c: skewCluster{DataDirRec: rec("v1.33.0+skiff", 1)},
			want: []string{"never downgraded"}},
		{name: "data dir of a newer format", self: cp("v1.33.0+skiff"), c: skewCluster{DataDirRec: rec("v1.33.0+skiff", 2)},
			want: []string{"data format 2", "data format 1", "does not know its data format"}},
		{name: "control plane's data dir skipping a minor", self: cp("v1.35.0+skiff"), c: skewCluster{DataDirRec: rec("v1.33.0+skiff", 1)},
			want: []string{"v1.35.0+skiff", "v1.33.0+skiff", "at most 1 minor version at a time"}},
		{name: "worker's data dir may skip minors", self: worker("v1.35.0+skiff"), c: skewCluster{DataDirRec: rec("v1.33.0+skiff", 1)}},
		{name: "data dir of another major", self: cp("v2.0.0+skiff"), c: skewCluster{DataDirRec: rec("v1.33.0+skiff", 1)},
			want: []string{"major"}},
		{name: "control plane one minor newer than the API server", self: cp("v1.34.0+skiff"), c: skewCluster{APIServer: "v1.33.0+skiff"}},
		{name: "control plane one minor older than the API server", self: cp("v1.32.0+skiff"), c: skewCluster{APIServer: "v1.33.0+skiff"}},
		{name: "control plane two minors older than the API server", self: cp("v1.31.0+skiff"), c: skewCluster{APIServer: "v1.33.0+skiff"},
			want: []string{"v1.31.0+skiff", "the API server is v1.33.0+skiff", "within 1 minor"}},
		{name: "control plane two minors newer than another control plane", self: cp("v1.35.0+skiff"),
			c:    skewCluster{APIServer: "v1.34.0+skiff", ControlPlanes: map[string]string{"cp-2": "v1.34.1+skiff", "cp-3": "v1.33.0+skiff"}},
			want: []string{"control plane cp-3 is v1.33.0+skiff", "within 1 minor"}},
		{name: "worker on the API server's version", self: worker("v1.33.0+skiff"), c: skewCluster{APIServer: "v1.33.1+skiff"}},
		{name: "worker newer by a patch only", self: worker("v1.33.5+skiff"), c: skewCluster{APIServer: "v1.33.1+skiff"}},
		{name: "worker three minors older", self: worker("v1.30.0+skiff"), c: skewCluster{APIServer: "v1.33.0+skiff"}},
		{name: "worker four minors older", self: worker("v1.29.0+skiff"), c: skewCluster{APIServer: "v1.33.0+skiff"},
			want: []string{"v1.29.0+skiff", "v1.33.0+skiff", "at most 3 minor versions older"}},
		{name: "worker newer than the API server", self: worker("v1.34.0+skiff"), c: skewCluster{APIServer: "v1.33.0+skiff"},
			want: []string{"v1.34.0+skiff", "v1.33.0+skiff", "never newer", "upgrade every control plane first"}},
		{name: "worker newer than a control plane not yet upgraded", self: worker("v1.34.0+skiff"),
			c:    skewCluster{APIServer: "v1.34.0+skiff", ControlPlanes: map[string]string{"cp-1": "v1.34.0+skiff", "cp-2": "v1.33.0+skiff"}},
			want: []string{"control plane cp-2 is v1.33.0+skiff", "upgrade every control plane first"}},
		{name: "unparseable API server version", self: worker("v1.33.0+skiff"), c: skewCluster{APIServer: "banana"},
			want: []string{"banana"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkSkew(tc.self, tc.c)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("allowed, want a refusal naming %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestDataDirRecord: a missing record is none, a written one reads back as this binary, a newer
// format is never lowered, and a too-new data dir is refused by checkDataDir without a write.
func TestDataDirRecord(t *testing.T) {
	dir := t.TempDir()
	if rec, err := readDataDirRecord(dir); err != nil || rec != nil {
		t.Fatalf("empty dir: %+v, %v", rec, err)
	}
	if err := writeDataDirRecord(dir, nil); err != nil {
		t.Fatal(err)
	}
	rec, err := readDataDirRecord(dir)
	if err != nil || rec == nil || rec.KubernetesVersion != skiffversion.GitVersion || rec.DataFormat != skiffversion.DataFormat {
		t.Fatalf("record %+v, %v", rec, err)
	}
	// A newer binary migrated the data dir to format 9; this binary records itself without
	// lowering the format (it is refused below anyway, but the record must never claim less).
	if err := os.WriteFile(filepath.Join(dir, versionFile), []byte(`{"kubernetesVersion":"v1.33.0+skiff","dataFormat":9}`), 0o600); err != nil {
		t.Fatal(err)
	}
	prev, err := readDataDirRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeDataDirRecord(dir, &dataDirRecord{KubernetesVersion: "v1.32.0+skiff", DataFormat: prev.DataFormat}); err != nil {
		t.Fatal(err)
	}
	if rec, _ := readDataDirRecord(dir); rec.DataFormat != 9 {
		t.Fatalf("data format lowered to %d", rec.DataFormat)
	}
	// Refused: the record stays as it was.
	before, _ := os.ReadFile(filepath.Join(dir, versionFile))
	_, err = checkDataDir(dir, true)
	var skew *skewError
	if !errors.As(err, &skew) {
		t.Fatalf("data dir of format 9: %v, want a skew refusal", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, versionFile)); string(after) != string(before) {
		t.Fatalf("refused check changed the record: %s -> %s", before, after)
	}
	if err := os.WriteFile(filepath.Join(dir, versionFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readDataDirRecord(dir); err == nil {
		t.Fatal("a torn record read without error")
	}
}
