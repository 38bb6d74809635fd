package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// commandContext is the context every long-running command works in: Ctrl-C or a SIGTERM (systemd's
// stop) cancels it, so the command stops the way its own code says instead of dying mid-write.
func commandContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
