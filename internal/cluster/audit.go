package cluster

import (
	"errors"

	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/apiserver/audit"
)

// newAuditor builds the API server's audit log from --audit-policy-file and --audit-log-path; as in
// kube-apiserver, nothing is audited without a policy.
func newAuditor(cfg *Config) (*audit.Auditor, error) {
	if cfg.AuditPolicyFile == "" && cfg.AuditLogPath == "" {
		return nil, nil
	}
	if cfg.AuditPolicyFile == "" || cfg.AuditLogPath == "" {
		return nil, errors.New("--audit-policy-file and --audit-log-path go together")
	}
	policy, err := audit.LoadPolicy(cfg.AuditPolicyFile)
	if err != nil {
		return nil, err
	}
	writer, err := audit.NewFileWriter(cfg.AuditLogPath, int64(cfg.AuditLogMaxSizeMB)<<20, cfg.AuditLogMaxBackups, clock.RealClock{}, cfg.Logger)
	if err != nil {
		return nil, err
	}
	return &audit.Auditor{Policy: policy, Writer: writer, Clock: clock.RealClock{}}, nil
}
