package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestMeasurementsAgainstARealServer builds skiff, starts it and runs both measurements briefly: the
// figures themselves are not asserted (a test never asserts wall-clock time), their bookkeeping is.
func TestMeasurementsAgainstARealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a skiff server")
	}
	binary := os.Getenv("SKIFF_BIN")
	if binary == "" {
		binary = filepath.Join(t.TempDir(), "skiff")
		build := exec.Command("go", "build", "-o", binary, "github.com/skiff-sh/skiff/cmd/skiff")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := StartServer(ctx, ServerOptions{Binary: binary, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	cfg, err := srv.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}

	for _, ct := range []string{"", ContentTypeProtobuf} {
		res, err := RunCreates(ctx, cfg, CreateOptions{Concurrency: 3, Duration: 500 * time.Millisecond, ContentType: ct,
			Namespace: "smoke", PayloadBytes: 1024, NamePrefix: contentTypeName(ct)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Errors != 0 || res.Creates == 0 || res.Latency.Count != res.Creates || res.Latency.P50 > res.Latency.P99 {
			t.Fatalf("creates (%s) = %+v, want error-free creates with consistent latency figures", contentTypeName(ct), res)
		}
	}

	fan, err := RunFanout(ctx, cfg, FanoutOptions{Watchers: 4, Duration: 500 * time.Millisecond, Namespace: "smoke-fanout",
		PayloadBytes: 1024, DrainTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if fan.Writes == 0 || fan.Expected != fan.Writes*4 || fan.Delivered != fan.Expected || fan.Failures != 0 || fan.Delay.Count != fan.Delivered {
		t.Fatalf("fan-out = %+v, want every write delivered to every watcher", fan)
	}
}
