package controllers

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiff-sh/skiff/internal/simnode"
	"github.com/skiff-sh/skiff/test/bench"
)

// env is one running skiff with simulated nodes, shared by a test's scenarios.
type env struct {
	client kubernetes.Interface
	nodes  []string
	// restConfig is the admin's, for clients a test builds itself.
	restConfig *rest.Config
}

// startEnv builds skiff, starts it and registers nodes simulated nodes; everything stops when t
// ends.
func startEnv(t *testing.T, nodes int) *env {
	t.Helper()
	return startEnvArgs(t, nodes)
}

// startEnvArgs is startEnv with extra server flags (e.g. --controllers to leave one out).
func startEnvArgs(t *testing.T, nodes int, extraArgs ...string) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real skiff server")
	}
	bin := filepath.Join(t.TempDir(), "skiff")
	build := exec.Command("go", "build", "-o", bin, "github.com/skiff-sh/skiff/cmd/skiff")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build skiff: %v\n%s", err, out)
	}
	logPath := filepath.Join(t.TempDir(), "skiff.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := bench.StartServer(ctx, bench.ServerOptions{Binary: bin, Log: logFile, ExtraArgs: append([]string{"--log-level", "info"}, extraArgs...)})
	if err != nil {
		cancel()
		t.Fatalf("start skiff: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		srv.Stop()
		logFile.Close()
		if t.Failed() {
			tailLog(t, logPath)
		}
	})
	cfg, err := srv.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simnode.Start(ctx, simnode.Config{
		Client: client, Nodes: nodes, NamePrefix: "it-", HeartbeatInterval: 2 * time.Second,
		// A short start delay makes a rollout take several steps, so bounds are sampled mid-way.
		PodStartDelay: 200 * time.Millisecond,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		t.Fatalf("simulated nodes: %v", err)
	}
	t.Cleanup(sim.Stop)
	return &env{client: client, nodes: sim.NodeNames(), restConfig: cfg}
}

func tailLog(t *testing.T, path string) {
	data, _ := os.ReadFile(path)
	if len(data) > 6000 {
		data = data[len(data)-6000:]
	}
	t.Logf("skiff log (tail):\n%s", data)
}

// namespace creates a namespace and waits for its default service account (pods need it).
func (e *env) namespace(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := e.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	waitFor(t, 30*time.Second, func() error {
		_, err := e.client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	return name
}

// waitFor polls f until it returns nil, failing t after timeout with f's last error.
func waitFor(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for {
		if err = f(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %v", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// gone reports nil once get says NotFound.
func gone(err error, what string) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get %s: %w", what, err)
	}
	return fmt.Errorf("%s still exists", what)
}

func must(t *testing.T, err error, what ...string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(what, " "), err)
	}
}
