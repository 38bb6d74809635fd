package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/skiff-sh/skiff/internal/images"
	"github.com/skiff-sh/skiff/internal/kubelet/containerd"
)

const imagesUsage = `Usage:
  skiff images import [--data-dir DIR | --address SOCKET] FILE.tar...   load image archives into the node's runtime
  skiff images build-busybox [--tag REF] [--out DIR]                     write an offline busybox image archive
`

func runImages(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, imagesUsage)
		return errors.New("skiff images: a subcommand is required")
	}
	switch args[0] {
	case "import":
		fs := flag.NewFlagSet("skiff images import", flag.ContinueOnError)
		fs.SetOutput(stderr)
		dataDir := fs.String("data-dir", defaultDataDir(), "the node's data directory (its supervised containerd)")
		address := fs.String("address", "", "containerd socket (default: the one skiff supervises under --data-dir)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			return errors.New("skiff images import: name at least one image archive")
		}
		socket := *address
		if socket == "" {
			socket = containerd.Default(filepath.Join(*dataDir, "kubelet")).Address
		}
		for _, file := range fs.Args() {
			if err := images.Import(context.Background(), socket, file); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "imported %s\n", file)
		}
		return nil
	case "build-busybox":
		fs := flag.NewFlagSet("skiff images build-busybox", flag.ContinueOnError)
		fs.SetOutput(stderr)
		tag := fs.String("tag", images.BusyboxImage, "image reference to write into the archive")
		out := fs.String("out", ".", "directory to write the archive into")
		cmd := fs.String("cmd", "", "default command, space separated (default: a shell)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		var command []string
		if *cmd != "" {
			command = strings.Fields(*cmd)
		}
		path, err := images.BuildBusybox(*out, *tag, command)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, path)
		return nil
	}
	fmt.Fprint(stderr, imagesUsage)
	return fmt.Errorf("skiff images: unknown subcommand %q", args[0])
}
