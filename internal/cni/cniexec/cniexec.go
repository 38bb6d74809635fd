package cniexec

import (
	"os"

	"github.com/skiff-sh/skiff/internal/cni"
)

func init() {
	if cni.IsPluginName(os.Args[0]) {
		os.Exit(cni.Main(os.Getenv, os.Stdin, os.Stdout))
	}
}
