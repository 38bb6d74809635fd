package cluster

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/apimachinery/pkg/runtime/schema"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/gatewayapi/crds"
)

// ensureGatewayAPIDefinitions creates the Gateway API's standard-channel definitions that are
// absent (issue 29): Gateways and HTTPRoutes work with nothing installed. One that exists, of this
// release or another an operator installed, is left as it is. A definition the API server refuses
// is logged and left out rather than failing the start: the cluster runs without that resource
// (the embedded YAML is not the operator's to fix; e2e TestGatewayAPIControlSide guards it).
func ensureGatewayAPIDefinitions(ctx context.Context, srv *apiserver.Server, log *slog.Logger) error {
	defs, err := crds.Definitions()
	if err != nil {
		return err
	}
	gr := schema.GroupResource{Group: crdv1.GroupName, Resource: "customresourcedefinitions"}
	for _, d := range defs {
		if err := srv.EnsureObject(ctx, gr, d); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("gateway api %s: %w", crds.BundleVersion, err)
			}
			log.Error("gateway api definition not installed", "name", d.Name, "release", crds.BundleVersion, "err", err)
		}
	}
	return nil
}
