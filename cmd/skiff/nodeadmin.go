package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-sh/skiff/internal/etcdapi"
	"github.com/skiff-sh/skiff/internal/nodeadmin"
	"github.com/skiff-sh/skiff/internal/pki"
)

const nodeUsage = `Usage:
  skiff node remove NAME [--data-dir D] [--kubeconfig K]
      cordon node NAME, remove its etcd member (if any), delete its Node object
`

// adminClients loads the kubeconfig (--kubeconfig, $KUBECONFIG, else the data dir's admin one).
func adminClients(kubeconfig, dataDir string) (*rest.Config, kubernetes.Interface, *etcdapi.Client, error) {
	path := kubeconfig
	if path == "" {
		path = filepath.Join(dataDir, "admin.kubeconfig")
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("load kubeconfig %s: %w", path, err)
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, nil, nil, err
	}
	ec, err := etcdapi.NewClient(restCfg)
	if err != nil {
		return nil, nil, nil, err
	}
	return restCfg, cs, ec, nil
}

func runNode(args []string, stdout, stderr io.Writer) error {
	if len(args) < 1 || args[0] != "remove" {
		fmt.Fprint(stderr, nodeUsage)
		return errors.New("skiff node: remove NAME")
	}
	fs := flag.NewFlagSet("skiff node remove", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of a cluster admin (default: $KUBECONFIG, else <data-dir>/admin.kubeconfig)")
	dataDir := fs.String("data-dir", defaultDataDir(), "node data directory whose admin kubeconfig to use when --kubeconfig is empty")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
	if err := fs.Parse(reorderFlags(args[1:])); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fmt.Fprint(stderr, nodeUsage)
		return errors.New("skiff node remove: name one node")
	}
	_, cs, ec, err := adminClients(*kubeconfig, *dataDir)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	return nodeadmin.RemoveNode(ctx, cs, ec, fs.Arg(0), stdout)
}

func runStatus(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("skiff status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of a cluster admin (default: $KUBECONFIG, else <data-dir>/admin.kubeconfig)")
	dataDir := fs.String("data-dir", defaultDataDir(), "node data directory whose admin kubeconfig to use when --kubeconfig is empty")
	output := fs.String("o", "", "output format: empty for a table screen, or json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *output != "" && *output != "json" {
		return fmt.Errorf("skiff status: -o %q: want json or nothing", *output)
	}
	_, cs, ec, err := adminClients(*kubeconfig, *dataDir)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in, err := nodeadmin.Gather(ctx, cs, ec, time.Now())
	if err != nil {
		return err
	}
	// The certificates are this node's own, read from its data dir (absent: none shown).
	in.Certificates, _ = pki.ReadExpiries(filepath.Join(*dataDir, "pki"))
	report := nodeadmin.BuildReport(in)
	if *output == "json" {
		return report.WriteJSON(stdout)
	}
	return report.WriteText(stdout, in.Now)
}

// reorderFlags moves flags after the positional NAME before it, so `skiff node remove NAME
// --data-dir D` parses as the usage shows.
func reorderFlags(args []string) []string {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
			if !strings.Contains(a, "=") && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			positional = append(positional, a)
		}
	}
	return append(flags, positional...)
}
