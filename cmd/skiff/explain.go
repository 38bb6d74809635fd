package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-sh/skiff/internal/scheduler"
	"github.com/skiff-sh/skiff/internal/scheduler/framework"
)

// runExplain answers an operator's "why does this pod not fit that node": the scheduler's
// per-plugin verdicts and scores for one pod on one node.
func runExplain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("skiff explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (default: $KUBECONFIG, else <data-dir>/admin.kubeconfig)")
	dataDir := fs.String("data-dir", defaultDataDir(), "node data directory whose admin kubeconfig to use when --kubeconfig is empty")
	namespace := fs.String("namespace", "default", "the pod's namespace")
	fs.StringVar(namespace, "n", "default", "the pod's namespace (shorthand)")
	node := fs.String("node", "", "the node to check the pod against (required)")
	config := fs.String("scheduler-config", "", "scheduler configuration file to evaluate with (default profile when empty)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: skiff explain [-n NAMESPACE] --node NODE POD")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *node == "" {
		fs.Usage()
		return errors.New("skiff explain: name one pod and --node")
	}
	path := *kubeconfig
	if path == "" {
		path = filepath.Join(*dataDir, "admin.kubeconfig")
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return fmt.Errorf("load kubeconfig %s: %w", path, err)
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	var conf *framework.Configuration
	if *config != "" {
		if conf, err = framework.LoadConfig(*config); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	report, err := scheduler.ExplainWithConfig(ctx, client, conf, *namespace, fs.Arg(0), *node)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, report.String())
	return nil
}
