package cluster

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/apiserver/admission/policy"
	"github.com/skiff-sh/skiff/internal/apiserver/admission/pvcresize"
	"github.com/skiff-sh/skiff/internal/apiserver/admission/storageprotection"
	"github.com/skiff-sh/skiff/internal/apiserver/admission/webhook"
	"github.com/skiff-sh/skiff/internal/openapi"
	"github.com/skiff-sh/skiff/internal/registry/builtin"
)

// admissionChain is the API server's admission plugins and what they need once the server runs.
type admissionChain struct {
	webhooks *webhook.Webhooks
	policies *policy.Plugin
	protect  protectPlugins
	// notReadySeconds and unreachableSeconds are DefaultTolerationSeconds' (tolerations.go).
	notReadySeconds, unreachableSeconds int64
}

// newAdmission builds the chain in Kubernetes' order: the built-in plugins, then
// MutatingAdmissionWebhook (its Admit runs after the built-in defaulting), then
// ValidatingAdmissionPolicy and ValidatingAdmissionWebhook (their Validate after the built-in checks).
func newAdmission(cfg *Config) (*admissionChain, error) {
	scheme, err := builtin.NewScheme()
	if err != nil {
		return nil, err
	}
	hooks, err := webhook.New(webhook.Config{Logger: cfg.Logger, Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("webhook admission: %w", err)
	}
	policies, err := policy.New(cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("policy admission: %w", err)
	}
	protect, err := newProtectPlugins(cfg)
	if err != nil {
		return nil, err
	}
	notReady, unreachable := defaultTolerationSeconds(cfg)
	return &admissionChain{webhooks: hooks, policies: policies, protect: protect, notReadySeconds: notReady, unreachableSeconds: unreachable}, nil
}

// plugins is the chain with builtins (those that need the server's authorizer, such as RBAC's
// escalation check and NodeRestriction) after the default plugins and before the webhooks; the
// protecting plugins (admission_protect.go) go in upstream's places: LimitRanger, PodSecurity and
// the image policy with the built-in ones, ResourceQuota last. StorageObjectInUseProtection and
// PersistentVolumeClaimResize follow DefaultStorageClass, as upstream orders them.
func (c *admissionChain) plugins(builtins ...apiserver.AdmissionPlugin) []apiserver.AdmissionPlugin {
	chain := append(apiserver.DefaultAdmissionTolerating(c.notReadySeconds, c.unreachableSeconds), storageprotection.Plugin{}, pvcresize.Plugin{})
	chain = append(chain, c.protect.builtin()...)
	chain = append(chain, builtins...)
	return append(chain, c.webhooks.Mutating(), c.policies, c.webhooks.Validating(), c.protect.quota)
}

// start connects the plugins' caches to the server's store.
func (c *admissionChain) start(ctx context.Context, srv *apiserver.Server) error {
	if err := c.webhooks.Start(ctx, srv.ListWatch); err != nil {
		return fmt.Errorf("start webhook admission: %w", err)
	}
	if err := c.policies.Start(ctx, srv); err != nil {
		return fmt.Errorf("start policy admission: %w", err)
	}
	return nil
}

// startTypeChecking keeps the ValidatingAdmissionPolicies' status.typeChecking current from the
// served resources and their OpenAPI schemas (Kubernetes runs this in its controller manager, whose
// schemas come from the same documents through discovery).
func (c *admissionChain) startTypeChecking(ctx context.Context, srv *apiserver.Server, oapi *openapi.Service) error {
	kindsFor := func(gvr schema.GroupVersionResource) []schema.GroupVersionKind {
		for _, r := range srv.Resources() {
			if r.GroupVersion == gvr.GroupVersion() && r.Plural == gvr.Resource {
				return []schema.GroupVersionKind{r.GroupVersionKind()}
			}
		}
		return nil
	}
	write := func(ctx context.Context, p *admissionregistrationv1.ValidatingAdmissionPolicy) error {
		_, err := srv.UpdateStatus(ctx, admissionregistrationv1.GroupName, "validatingadmissionpolicies", p)
		return err
	}
	if err := c.policies.StartTypeChecking(ctx, policy.Schemas{KindsFor: kindsFor, KindSchema: oapi.KindSchema}, write); err != nil {
		return fmt.Errorf("start policy type checking: %w", err)
	}
	return nil
}
