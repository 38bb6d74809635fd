package cluster

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/gatewayapi/crds"
)

// ensureGatewayAPIDefinitions creates the Gateway API's standard-channel definitions that are
// absent (issue 29): Gateways and HTTPRoutes work with nothing installed. One that exists, of this
// release or another an operator installed, is left as it is.
func ensureGatewayAPIDefinitions(ctx context.Context, srv *apiserver.Server) error {
	defs, err := crds.Definitions()
	if err != nil {
		return err
	}
	gr := schema.GroupResource{Group: crdv1.GroupName, Resource: "customresourcedefinitions"}
	for _, d := range defs {
		if err := srv.EnsureObject(ctx, gr, d); err != nil {
			return fmt.Errorf("gateway api %s: %w", crds.BundleVersion, err)
		}
	}
	return nil
}
