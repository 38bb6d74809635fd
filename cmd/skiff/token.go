package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-sh/skiff/internal/cluster"
	"github.com/skiff-sh/skiff/internal/join"
)

const tokenUsage = `Usage:
  skiff token create [--data-dir D] [--ttl 24h] [--description TEXT] [--control-plane]
                         store a new bootstrap token and print the join token
                         K10<sha256 of the CA public key>::<id>.<secret>
  skiff token list [--data-dir D]      the stored tokens (never their secrets)
  skiff token delete [--data-dir D] ID  remove a token: nodes can no longer join with it
`

func runToken(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, tokenUsage)
		return errors.New("skiff token: create, list or delete")
	}
	fs := flag.NewFlagSet("skiff token "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", defaultDataDir(), "data dir of a control-plane node (its admin kubeconfig and CA are used)")
	var ttl *time.Duration
	var description *string
	var controlPlane *bool
	if args[0] == "create" {
		ttl = fs.Duration("ttl", 24*time.Hour, "how long the token is good for (0: never expires)")
		description = fs.String("description", "", "a note stored with the token")
		controlPlane = fs.Bool("control-plane", false, "the token may also join control-plane nodes: uploads the cluster CA and service-account keys to kube-system/skiff-cluster-keys, readable only with such tokens")
	}
	switch args[0] {
	case "create", "list", "delete":
	default:
		fmt.Fprint(stderr, tokenUsage)
		return fmt.Errorf("skiff token: unknown command %q", args[0])
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	kubeconfig := (&cluster.Config{DataDir: *dataDir}).AdminKubeconfigPath()
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("admin kubeconfig %s (run on a control-plane node, or pass --data-dir): %w", kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch args[0] {
	case "create":
		if fs.NArg() > 0 {
			return fmt.Errorf("unexpected arguments: %v", fs.Args())
		}
		if *ttl < 0 {
			return errors.New("--ttl must not be negative")
		}
		ca, err := readCA(filepath.Join(*dataDir, "pki", "ca.crt"))
		if err != nil {
			return err
		}
		opts := join.SecretOptions{TTL: *ttl, Description: *description}
		if *controlPlane {
			keys, err := join.ReadKeys(filepath.Join(*dataDir, "pki"))
			if err != nil {
				return err
			}
			if err := join.UploadKeys(ctx, client, keys); err != nil {
				return err
			}
			opts.ExtraGroups = []string{join.DefaultNodeGroup, join.ControlPlaneGroup}
		}
		jt, err := join.CreateToken(ctx, client, ca, opts, time.Now())
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, jt.String())
		return nil
	case "list":
		infos, err := join.ListTokens(ctx, client)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 3, ' ', 0)
		fmt.Fprintln(w, "ID\tTTL\tEXPIRES\tUSAGES\tDESCRIPTION\tEXTRA GROUPS")
		now := time.Now()
		for _, in := range infos {
			ttl, expires := "<forever>", "<never>"
			if in.Expires != nil {
				expires = in.Expires.UTC().Format(time.RFC3339)
				if d := in.Expires.Sub(now); d > 0 {
					ttl = d.Round(time.Second).String()
				} else {
					ttl = "<expired>"
				}
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", in.ID, ttl, expires, strings.Join(in.Usages, ","), orNone(in.Description), strings.Join(in.Groups, ","))
		}
		return w.Flush()
	default: // delete
		if fs.NArg() != 1 {
			return errors.New("skiff token delete: one token ID is required")
		}
		if err := join.DeleteToken(ctx, client, fs.Arg(0)); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "token %s deleted\n", strings.SplitN(fs.Arg(0), ".", 2)[0])
		return nil
	}
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func readCA(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read cluster CA: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("cluster CA %s is not PEM", path)
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse cluster CA %s: %w", path, err)
	}
	return ca, nil
}
