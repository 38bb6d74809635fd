package framework

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// DefaultSchedulerName is the profile name pods get when spec.schedulerName is empty.
const DefaultSchedulerName = "default-scheduler"

// Configuration is skiff's scheduler configuration file, shaped like
// kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration (the subset skiff
// implements; unknown fields are rejected so typos do not pass silently).
type Configuration struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	// Parallelism bounds the workers that filter and score nodes.
	Parallelism *int32 `json:"parallelism,omitempty"`
	// PercentageOfNodesToScore: 0 means adaptive (as Kubernetes), 100 means all.
	PercentageOfNodesToScore *int32                      `json:"percentageOfNodesToScore,omitempty"`
	PodInitialBackoffSeconds *int64                      `json:"podInitialBackoffSeconds,omitempty"`
	PodMaxBackoffSeconds     *int64                      `json:"podMaxBackoffSeconds,omitempty"`
	LeaderElection           LeaderElectionConfiguration `json:"leaderElection,omitempty"`
	Profiles                 []Profile                   `json:"profiles,omitempty"`
}

// LeaderElectionConfiguration mirrors component-base's leader election block.
type LeaderElectionConfiguration struct {
	LeaderElect       *bool           `json:"leaderElect,omitempty"`
	LeaseDuration     metav1.Duration `json:"leaseDuration,omitempty"`
	RenewDeadline     metav1.Duration `json:"renewDeadline,omitempty"`
	RetryPeriod       metav1.Duration `json:"retryPeriod,omitempty"`
	ResourceLock      string          `json:"resourceLock,omitempty"`
	ResourceName      string          `json:"resourceName,omitempty"`
	ResourceNamespace string          `json:"resourceNamespace,omitempty"`
}

// Profile is one scheduler name with its plugin set.
type Profile struct {
	SchedulerName            string         `json:"schedulerName,omitempty"`
	PercentageOfNodesToScore *int32         `json:"percentageOfNodesToScore,omitempty"`
	Plugins                  *Plugins       `json:"plugins,omitempty"`
	PluginConfig             []PluginConfig `json:"pluginConfig,omitempty"`
}

// Plugins enables and disables plugins per extension point; MultiPoint applies
// to every extension point a plugin implements.
type Plugins struct {
	MultiPoint PluginSet `json:"multiPoint,omitempty"`
	QueueSort  PluginSet `json:"queueSort,omitempty"`
	PreFilter  PluginSet `json:"preFilter,omitempty"`
	Filter     PluginSet `json:"filter,omitempty"`
	PostFilter PluginSet `json:"postFilter,omitempty"`
	PreScore   PluginSet `json:"preScore,omitempty"`
	Score      PluginSet `json:"score,omitempty"`
	Reserve    PluginSet `json:"reserve,omitempty"`
	PreBind    PluginSet `json:"preBind,omitempty"`
	Bind       PluginSet `json:"bind,omitempty"`
}

// PluginSet lists plugins to enable and to disable ("*" disables every default).
type PluginSet struct {
	Enabled  []PluginRef `json:"enabled,omitempty"`
	Disabled []PluginRef `json:"disabled,omitempty"`
}

// PluginRef names a plugin; Weight applies to Score.
type PluginRef struct {
	Name   string `json:"name"`
	Weight int32  `json:"weight,omitempty"`
}

// PluginConfig carries a plugin's arguments (JSON after YAML conversion).
type PluginConfig struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// LoadConfig reads, defaults and validates a configuration file.
func LoadConfig(path string) (*Configuration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scheduler config: %w", err)
	}
	return ParseConfig(data)
}

// ParseConfig decodes YAML or JSON configuration, then defaults and validates it.
func ParseConfig(data []byte) (*Configuration, error) {
	cfg := &Configuration{}
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		return nil, fmt.Errorf("decode scheduler config: %w", err)
	}
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// DefaultConfiguration is what skiff runs with when no file is given.
func DefaultConfiguration() *Configuration {
	cfg := &Configuration{}
	cfg.SetDefaults()
	return cfg
}

// SetDefaults fills unset fields with Kubernetes' defaults.
func (c *Configuration) SetDefaults() {
	if c.APIVersion == "" {
		c.APIVersion = "kubescheduler.config.k8s.io/v1"
	}
	if c.Kind == "" {
		c.Kind = "KubeSchedulerConfiguration"
	}
	setInt32(&c.Parallelism, 16)
	setInt32(&c.PercentageOfNodesToScore, 0)
	setInt64(&c.PodInitialBackoffSeconds, 1)
	setInt64(&c.PodMaxBackoffSeconds, 10)
	le := &c.LeaderElection
	if le.LeaderElect == nil {
		t := true
		le.LeaderElect = &t
	}
	setDuration(&le.LeaseDuration, 15*time.Second)
	setDuration(&le.RenewDeadline, 10*time.Second)
	setDuration(&le.RetryPeriod, 2*time.Second)
	if le.ResourceLock == "" {
		le.ResourceLock = "leases"
	}
	if le.ResourceName == "" {
		le.ResourceName = "kube-scheduler"
	}
	if le.ResourceNamespace == "" {
		le.ResourceNamespace = "kube-system"
	}
	if len(c.Profiles) == 0 {
		c.Profiles = []Profile{{}}
	}
	for i := range c.Profiles {
		if c.Profiles[i].SchedulerName == "" {
			c.Profiles[i].SchedulerName = DefaultSchedulerName
		}
	}
}

// Validate reports every problem found, joined.
func (c *Configuration) Validate() error {
	var errs []error
	if c.APIVersion != "kubescheduler.config.k8s.io/v1" {
		errs = append(errs, fmt.Errorf("apiVersion: unsupported value %q", c.APIVersion))
	}
	if c.Kind != "KubeSchedulerConfiguration" {
		errs = append(errs, fmt.Errorf("kind: unsupported value %q", c.Kind))
	}
	if *c.Parallelism <= 0 {
		errs = append(errs, fmt.Errorf("parallelism: must be greater than 0, got %d", *c.Parallelism))
	}
	if p := *c.PercentageOfNodesToScore; p < 0 || p > 100 {
		errs = append(errs, fmt.Errorf("percentageOfNodesToScore: must be in [0, 100], got %d", p))
	}
	if *c.PodInitialBackoffSeconds <= 0 {
		errs = append(errs, errors.New("podInitialBackoffSeconds: must be greater than 0"))
	}
	if *c.PodMaxBackoffSeconds < *c.PodInitialBackoffSeconds {
		errs = append(errs, errors.New("podMaxBackoffSeconds: must be at least podInitialBackoffSeconds"))
	}
	le := c.LeaderElection
	if le.LeaseDuration.Duration <= le.RenewDeadline.Duration {
		errs = append(errs, errors.New("leaderElection.leaseDuration: must be greater than renewDeadline"))
	}
	if le.RetryPeriod.Duration <= 0 || le.RenewDeadline.Duration <= le.RetryPeriod.Duration {
		errs = append(errs, errors.New("leaderElection.retryPeriod: must be positive and less than renewDeadline"))
	}
	if le.ResourceLock != "leases" {
		errs = append(errs, fmt.Errorf("leaderElection.resourceLock: only \"leases\" is supported, got %q", le.ResourceLock))
	}
	seen := map[string]bool{}
	for i, p := range c.Profiles {
		if seen[p.SchedulerName] {
			errs = append(errs, fmt.Errorf("profiles[%d].schedulerName: duplicate value %q", i, p.SchedulerName))
		}
		seen[p.SchedulerName] = true
		if p.PercentageOfNodesToScore != nil && (*p.PercentageOfNodesToScore < 0 || *p.PercentageOfNodesToScore > 100) {
			errs = append(errs, fmt.Errorf("profiles[%d].percentageOfNodesToScore: must be in [0, 100]", i))
		}
		if p.Plugins != nil {
			for _, ref := range p.Plugins.Score.Enabled {
				if ref.Weight < 0 || int64(ref.Weight) > 100 {
					errs = append(errs, fmt.Errorf("profiles[%d].plugins.score.enabled[%s].weight: must be in [0, 100]", i, ref.Name))
				}
			}
		}
	}
	return errors.Join(errs...)
}

func setInt32(p **int32, v int32) {
	if *p == nil {
		*p = &v
	}
}

func setInt64(p **int64, v int64) {
	if *p == nil {
		*p = &v
	}
}

func setDuration(d *metav1.Duration, v time.Duration) {
	if d.Duration == 0 {
		d.Duration = v
	}
}
