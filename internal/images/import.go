package images

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// CRINamespace is the containerd namespace the CRI plugin serves images from.
const CRINamespace = "k8s.io"

// Import loads a docker- or OCI-archive into the containerd listening on
// socket (the same socket serves CRI), in the CRI namespace, unpacked for the
// default snapshotter, so pods can use the image without a pull. It runs
// containerd's own ctr client rather than linking the containerd module.
func Import(ctx context.Context, socket, file string) error {
	if _, err := os.Stat(file); err != nil {
		return fmt.Errorf("import image archive: %w", err)
	}
	ctr, err := exec.LookPath("ctr")
	if err != nil {
		return fmt.Errorf("import image archive %s: ctr not found (install containerd): %w", file, err)
	}
	socket = strings.TrimPrefix(socket, "unix://")
	cmd := exec.CommandContext(ctx, ctr, "--address", socket, "--namespace", CRINamespace, "images", "import", file)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("import image archive %s into %s: %w: %s", file, socket, err, strings.TrimSpace(out.String()))
	}
	return nil
}
