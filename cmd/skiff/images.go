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
  skiff images build-dir --root DIR --tag REF [--out DIR] [--entrypoint CMD] [--cmd CMD] [--user U] [--env K=V]...
                                                                         write a one-layer image archive of a rootfs directory
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
	case "build-dir":
		return runImagesBuildDir(args[1:], stdout, stderr)
	}
	fmt.Fprint(stderr, imagesUsage)
	return fmt.Errorf("skiff images: unknown subcommand %q", args[0])
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func runImagesBuildDir(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("skiff images build-dir", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", "", "directory that becomes the image's root filesystem")
	tag := fs.String("tag", "", "image reference to write into the archive")
	out := fs.String("out", ".", "directory to write the archive into")
	entrypoint := fs.String("entrypoint", "", "entrypoint, space separated")
	cmd := fs.String("cmd", "", "default command, space separated")
	user := fs.String("user", "", "default user (uid or uid:gid)")
	var env stringList
	fs.Var(&env, "env", "environment variable K=V (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *root == "" || *tag == "" {
		return errors.New("skiff images build-dir: --root and --tag are required")
	}
	path, err := images.BuildDir(*out, images.DirSpec{
		Tag:        *tag,
		Root:       *root,
		Entrypoint: strings.Fields(*entrypoint),
		Cmd:        strings.Fields(*cmd),
		User:       *user,
		Env:        env,
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, path)
	return nil
}
