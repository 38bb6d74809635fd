package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/skiff-sh/skiff/internal/cluster"
)

// runSecretsEncrypt: skiff secrets-encrypt rotate [--data-dir D].
func runSecretsEncrypt(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "rotate" {
		return errors.New("usage: skiff secrets-encrypt rotate [--data-dir DIR]")
	}
	fs := flag.NewFlagSet("skiff secrets-encrypt rotate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", defaultDataDir(), "the data dir of the running node whose key to rotate")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	ctx, stop := commandContext()
	defer stop()
	return cluster.RotateSecretsEncryption(ctx, *dataDir, func(format string, a ...any) {
		fmt.Fprintf(stdout, format+"\n", a...)
	})
}
