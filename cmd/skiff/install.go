package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/skiff-sh/skiff/internal/install"
)

// runInstall: skiff install [--bin-dir D] [--unit-dir D] [--no-start] [-- SERVER ARGS...].
func runInstall(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("skiff install", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o install.Options
	fs.StringVar(&o.BinDir, "bin-dir", "/usr/local/bin", "where the skiff binary goes")
	fs.StringVar(&o.UnitDir, "unit-dir", "/etc/systemd/system", "where the systemd unit goes")
	noStart := fs.Bool("no-start", false, "write the unit without enabling and starting it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.ServerArgs, o.Start = fs.Args(), !*noStart
	ctx, stop := commandContext()
	defer stop()
	return install.Install(ctx, o, printer(stdout))
}

// runUninstall: skiff uninstall [--data-dir D] [--bin-dir D] [--unit-dir D] --yes.
func runUninstall(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("skiff uninstall", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o install.UninstallOptions
	fs.StringVar(&o.DataDir, "data-dir", defaultDataDir(), "the node's data dir, removed with everything the node left on the host")
	fs.StringVar(&o.BinDir, "bin-dir", "/usr/local/bin", "where skiff install put the binary")
	fs.StringVar(&o.UnitDir, "unit-dir", "/etc/systemd/system", "where skiff install put the unit")
	yes := fs.Bool("yes", false, "confirm: the node's data (etcd, certificates, volumes) is deleted")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !*yes {
		return errors.New("skiff uninstall deletes the node's data dir (etcd data, certificates, local volumes), its containers and its rules: run it again with --yes")
	}
	ctx, stop := commandContext()
	defer stop()
	return install.Uninstall(ctx, o, printer(stdout))
}

func printer(w io.Writer) func(string, ...any) {
	return func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
}
