package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/skiff-sh/skiff/internal/cluster"
)

const etcdUsage = `Usage:
  skiff etcd snapshot save [--data-dir D] FILE      snapshot the running node's etcd into FILE
  skiff etcd snapshot restore [--data-dir NEW] [--node-name N] [--etcd-peer-port P]
                              [--bind-address A] [--advertise-address A] FILE
                                                    prepare NEW so that skiff server --data-dir NEW
                                                    starts with every object of FILE
`

func runEtcd(args []string, stdout, stderr io.Writer) error {
	if len(args) < 2 || args[0] != "snapshot" {
		fmt.Fprint(stderr, etcdUsage)
		return errors.New("skiff etcd: snapshot save or snapshot restore")
	}
	switch args[1] {
	case "save":
		return runSnapshotSave(args[2:], stdout, stderr)
	case "restore":
		return runSnapshotRestore(args[2:], stdout, stderr)
	}
	fmt.Fprint(stderr, etcdUsage)
	return fmt.Errorf("skiff etcd snapshot: unknown command %q", args[1])
}

func runSnapshotSave(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("skiff etcd snapshot save", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", defaultDataDir(), "data dir of the running node")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("skiff etcd snapshot save: one FILE is required")
	}
	ctx, stop := commandContext()
	defer stop()
	st, err := cluster.SaveEtcdSnapshot(ctx, *dataDir, fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "saved %s: revision %d, %d keys, %d bytes\n", fs.Arg(0), st.Revision, st.TotalKeys, st.TotalSize)
	return nil
}

func runSnapshotRestore(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("skiff etcd snapshot restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg cluster.Config
	fs.StringVar(&cfg.DataDir, "data-dir", defaultDataDir(), "new data dir to restore into (must hold no etcd data)")
	fs.StringVar(&cfg.NodeName, "node-name", "", "name of the node that will run on it (default: host name)")
	fs.IntVar(&cfg.EtcdPeerPort, "etcd-peer-port", 2380, "embedded etcd peer port the node will use")
	fs.StringVar(&cfg.BindAddress, "bind-address", "0.0.0.0", "--bind-address the node will use")
	fs.StringVar(&cfg.AdvertiseAddress, "advertise-address", "", "--advertise-address the node will use (default: bind address, or the host's address)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("skiff etcd snapshot restore: one FILE is required")
	}
	if err := cluster.RestoreEtcdSnapshot(cfg, fs.Arg(0)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored %s into %s; start it with: skiff server --data-dir %s (copy pki/ from the old data dir first to keep the cluster's credentials)\n", fs.Arg(0), cfg.DataDir, cfg.DataDir)
	return nil
}
