package cluster

import (
	"fmt"
	"log/slog"

	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/apiserver/admission/imagepolicy"
	"github.com/skiff-sh/skiff/internal/apiserver/admission/limitranger"
	"github.com/skiff-sh/skiff/internal/apiserver/admission/podsecurity"
	"github.com/skiff-sh/skiff/internal/apiserver/admission/quota"
)

// protectPlugins are the admission plugins that protect a cluster from its workloads (issue 10):
// LimitRanger, PodSecurity, the image policy and ResourceQuota.
type protectPlugins struct {
	limitRanger *limitranger.Plugin
	podSecurity *podsecurity.Plugin
	imagePolicy *imagepolicy.Plugin
	quota       *quota.Plugin
}

// newProtectPlugins loads the PodSecurity configuration and the image policy (a bad file stops the
// node from starting rather than leaving it unprotected).
func newProtectPlugins(cfg *Config) (protectPlugins, error) {
	psa, err := podsecurity.LoadConfig(cfg.PodSecurityConfigFile)
	if err != nil {
		return protectPlugins{}, fmt.Errorf("pod security admission: %w", err)
	}
	images, err := imagepolicy.Load(cfg.ImagePolicyFile)
	if err != nil {
		return protectPlugins{}, fmt.Errorf("image policy admission: %w", err)
	}
	log := slog.New(slog.DiscardHandler)
	if cfg.Logger != nil {
		log = cfg.Logger.With("component", "admission")
	}
	return protectPlugins{
		limitRanger: limitranger.New(log),
		podSecurity: podsecurity.New(psa, log),
		imagePolicy: imagepolicy.New(images, log),
		quota:       quota.New(log),
	}, nil
}

// builtin are the plugins that sit with the built-in ones, in upstream's order: LimitRanger
// (defaults before anything validates), PodSecurity, then the image policy.
func (p protectPlugins) builtin() []apiserver.AdmissionPlugin {
	return []apiserver.AdmissionPlugin{p.limitRanger, p.podSecurity, p.imagePolicy}
}
