package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-sh/skiff/internal/dashboard"
)

// runDashboard serves the dashboard on loopback with the node's admin credentials (like kubectl
// proxy) and prints its URL.
func runDashboard(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("skiff dashboard", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", defaultDataDir(), "node data directory whose admin.kubeconfig the proxy uses")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig to use instead of <data-dir>/admin.kubeconfig")
	port := fs.Int("port", 8001, "loopback port to serve on (0: any free port)")
	address := fs.String("address", "127.0.0.1", "loopback address to serve on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	path := *kubeconfig
	if path == "" {
		path = filepath.Join(*dataDir, "admin.kubeconfig")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return fmt.Errorf("skiff dashboard: load %s: %w", path, err)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	ctx, stop := commandContext()
	defer stop()
	return dashboard.Serve(ctx, net.JoinHostPort(*address, strconv.Itoa(*port)), cfg, log, func(url string) {
		fmt.Fprintf(stdout, "Dashboard at %s (API server %s as the admin of %s); Ctrl-C stops it\n", url, cfg.Host, path)
	})
}
