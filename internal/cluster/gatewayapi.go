package cluster

import (
	"context"
	"log/slog"

	"k8s.io/apimachinery/pkg/runtime/schema"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/gatewayapi/crds"
)

// ensureGatewayAPIDefinitions creates the Gateway API's standard-channel definitions that are
// absent (issue 29): Gateways and HTTPRoutes work with nothing installed. One that exists, of this
// release or another an operator installed, is left as it is. It runs in the background once the
// API server is up; a definition the API server refuses is logged and left out (the embedded YAML
// is not the operator's to fix; e2e TestGatewayAPIControlSide guards it), the rest still created.
func ensureGatewayAPIDefinitions(ctx context.Context, srv *apiserver.Server, log *slog.Logger) {
	defs, err := crds.Definitions()
	if err != nil {
		log.Error("gateway api definitions not installed", "release", crds.BundleVersion, "err", err)
		return
	}
	gr := schema.GroupResource{Group: crdv1.GroupName, Resource: "customresourcedefinitions"}
	for _, d := range defs {
		if err := srv.EnsureObject(ctx, gr, d); err != nil {
			if ctx.Err() != nil {
				return // the node is stopping
			}
			log.Error("gateway api definition not installed", "name", d.Name, "release", crds.BundleVersion, "err", err)
		}
	}
}
