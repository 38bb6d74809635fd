package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/skiff-sh/skiff/internal/cluster"
	"github.com/skiff-sh/skiff/internal/pki"
)

const certificateUsage = `Usage:
  skiff certificate rotate [--data-dir DIR] [--service NAME ...]
        re-issue the node's leaf certificates now (all, or the ones named: apiserver, admin,
        kubelet, front-proxy-client, etcd/peer, ...), signed by the node's CAs; a running node
        serves and presents the new ones from its next handshake, without a restart
  skiff certificate check [--data-dir DIR]
        list the node's certificates with their expiry
  skiff certificate rotate-ca [--data-dir DIR] [--ca cluster|front-proxy|etcd] --phase trust|sign|retire
        on a control plane: rotate the cluster CA (or the front-proxy CA, which extension API
        servers trust for the API server's requests, or the etcd CA of the embedded members) in
        three runs, letting every node take each phase before the next; the other control planes
        follow each phase within seconds (etcd members restart one at a time to trust a changed
        bundle; sign and retire wait for them and say so). trust: a new CA (pki/ca-next.crt) is trusted beside the old one,
        which still signs; sign: the new CA signs, and every leaf of the node is re-issued by it;
        retire: the old CA is no longer trusted. The running node follows each phase from its
        next handshake, without a restart; joined nodes take the bundle from kube-public/
        cluster-info within a minute and, after sign, re-issue their certificates. Join tokens
        pin the CA that signs: create new ones (skiff token create) after sign
  skiff certificate rotate-sa-key [--data-dir DIR] [--prune-retired-sa-keys]
        on a control plane: sign service-account tokens with a new key from now on, keeping the
        old public key (<data-dir>/pki/sa-retired-<kid>.pub) verifying, so issued tokens stay
        valid; the running API server takes both at once. --prune-retired-sa-keys instead
        removes the retired keys (once the tokens they signed have expired)
`

func runCertificate(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || !slices.Contains([]string{"rotate", "check", "rotate-sa-key", "rotate-ca"}, args[0]) {
		fmt.Fprint(stderr, certificateUsage)
		return errors.New("skiff certificate: rotate, check, rotate-ca or rotate-sa-key")
	}
	fs := flag.NewFlagSet("skiff certificate "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", defaultDataDir(), "data dir of the node")
	var services []string
	if args[0] == "rotate" {
		fs.Var(commaList{&services}, "service", "a certificate to re-issue (a file under <data-dir>/pki without .crt); repeat or comma-separate; default: every leaf")
	}
	prune := false
	if args[0] == "rotate-sa-key" {
		fs.BoolVar(&prune, "prune-retired-sa-keys", false, "remove the retired service-account keys instead of rotating: the tokens they signed stop verifying")
	}
	phase, caKind := "", string(cluster.CAKindCluster)
	if args[0] == "rotate-ca" {
		fs.StringVar(&phase, "phase", "", "the phase to run: trust, sign, then retire")
		fs.StringVar(&caKind, "ca", caKind, "the CA to rotate: cluster, front-proxy or etcd")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if args[0] == "rotate-ca" {
		return rotateCA(stdout, *dataDir, cluster.CAKind(caKind), phase)
	}
	if args[0] == "rotate-sa-key" {
		return rotateSAKey(stdout, *dataDir, prune)
	}
	if args[0] == "check" {
		return printExpiries(stdout, filepath.Join(*dataDir, "pki"), time.Now())
	}
	// The lifetime a renewed leaf keeps is the one it had (a node run with a shortened lifetime
	// keeps its short leaves short).
	renewed, err := cluster.RotateCertificates(*dataDir, services, 0, time.Now())
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tOLD SERIAL\tNEW SERIAL\tEXPIRES")
	for _, c := range renewed {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, c.OldSerial, c.NewSerial, c.NewNotAfter.UTC().Format(time.RFC3339))
	}
	if ferr := tw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// printExpiries is the expiry table of the certificates in dir and dir/etcd.
func printExpiries(w io.Writer, dir string, now time.Time) error {
	var all []pki.CertExpiry
	for _, d := range []string{dir, filepath.Join(dir, "etcd")} {
		found, err := pki.ReadExpiries(d)
		if err != nil {
			return err
		}
		for i := range found {
			rel, _ := filepath.Rel(dir, found[i].Path)
			found[i].Name = rel[:len(rel)-len(".crt")]
		}
		all = append(all, found...)
	}
	if len(all) == 0 {
		return fmt.Errorf("no certificates in %s (pass the node's --data-dir)", dir)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tEXPIRES\tRESIDUAL TIME")
	for _, e := range all {
		if e.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t%s\n", e.Name, e.Error)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Name, e.NotAfter.UTC().Format(time.RFC3339), residual(e.NotAfter.Sub(now)))
	}
	return tw.Flush()
}

// residual is kubeadm's "residual time" column: days when there are some, else the duration.
func residual(d time.Duration) string {
	switch {
	case d <= 0:
		return "expired"
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	default:
		return d.Round(time.Second).String()
	}
}

// rotateSAKey runs skiff certificate rotate-sa-key and prints the kids.
func rotateSAKey(w io.Writer, dataDir string, prune bool) error {
	if prune {
		r, err := cluster.PruneRetiredSAKeys(dataDir)
		for _, kid := range r.Pruned {
			fmt.Fprintf(w, "pruned retired service account key %s\n", kid)
		}
		if err == nil && len(r.Pruned) == 0 {
			fmt.Fprintln(w, "no retired service account keys")
		}
		return err
	}
	r, err := cluster.RotateSAKey(dataDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "service account tokens are signed with key %s (was %s)\nverifying keys: %s\n", r.NewKeyID, r.OldKeyID, strings.Join(r.Verifying, ", "))
	return nil
}

// rotateCA runs skiff certificate rotate-ca and prints what the phase did.
func rotateCA(w io.Writer, dataDir string, kind cluster.CAKind, phase string) error {
	if !slices.Contains(cluster.CARotationPhases, cluster.CARotationPhase(phase)) {
		return fmt.Errorf("--phase is required: one of trust, sign, retire (in that order)")
	}
	if !slices.Contains(cluster.CAKinds, kind) {
		return fmt.Errorf("--ca %q: one of cluster, front-proxy, etcd", kind)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := cluster.RotateCA(ctx, dataDir, kind, cluster.CARotationPhase(phase), time.Now())
	if r != nil {
		for _, s := range r.Steps {
			fmt.Fprintf(w, "%s\n", s)
		}
		for _, c := range r.Renewed {
			fmt.Fprintf(w, "renewed %s (serial %s, was %s)\n", c.Name, c.NewSerial, c.OldSerial)
		}
		if err == nil {
			fmt.Fprintf(w, "phase %s done; ca.crt trusts: %s\n", phase, strings.Join(r.Trusted, ", "))
		}
	}
	if err != nil {
		return err
	}
	// The other control planes follow the files in the keys Secret within seconds.
	published, err := cluster.PublishRotatedCA(ctx, dataDir, kind)
	if err != nil {
		return fmt.Errorf("%w; the node's files are done: run the same phase again to publish them to the other control planes", err)
	}
	if published {
		fmt.Fprintln(w, "published the CA files in kube-system/skiff-cluster-keys; the other control planes follow within 10 s (their log: cluster CA followed)")
	}
	if kind == cluster.CAKindEtcd && phase != string(cluster.CAPhaseSign) {
		fmt.Fprintln(w, "the etcd members restart one at a time to read the new bundle (etcd reads the CAs it trusts when it starts): their log says etcd member restarted with its new CA bundle")
	}
	if kind != cluster.CAKindCluster {
		// Extension API servers read the front-proxy CA from kube-system/extension-apiserver-
		// authentication, which every control plane keeps with its file.
		return nil
	}
	// Joined nodes take the bundle from the cluster at their next certificate tick (a minute).
	changed, err := cluster.PublishClusterCA(ctx, dataDir)
	if err != nil {
		return fmt.Errorf("%w; the node's files are done: run the same phase again to publish the bundle to joined nodes", err)
	}
	if changed {
		fmt.Fprintln(w, "published ca.crt in kube-public/cluster-info; joined nodes take it within a minute")
	}
	return nil
}
