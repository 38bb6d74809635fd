// Package imagelocality implements ImageLocality: nodes that already hold the
// pod's images score higher, scaled by how widely each image is spread (an
// image on every node says little about any one of them).
package imagelocality

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
)

// Name is the plugin name.
const Name = "ImageLocality"

// Thresholds as Kubernetes uses them: below 23MB an image is not worth
// pulling-time consideration; 1000MB per container saturates the score.
const (
	minThreshold          int64 = 23 * 1024 * 1024
	maxContainerThreshold int64 = 1000 * 1024 * 1024
)

const stateKey framework.StateKey = "PreScore" + Name

type preScoreState struct {
	totalNodes int
	// images are the pod's init and app container images, normalized.
	images []string
}

func (s *preScoreState) Clone() framework.StateData { return s }

// ImageLocality is the plugin.
type ImageLocality struct{}

var (
	_ framework.PreScorePlugin = ImageLocality{}
	_ framework.ScorePlugin    = ImageLocality{}
)

// New builds the plugin.
func New(json.RawMessage, framework.Handle) (framework.Plugin, error) { return ImageLocality{}, nil }

// Name returns the plugin name.
func (ImageLocality) Name() string { return Name }

// PreScore records the node count.
func (ImageLocality) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo, all framework.NodeInfoLister) *framework.Status {
	s := &preScoreState{totalNodes: len(all.List())}
	// Normalized once here, not once per node and container in Score.
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			s.images = append(s.images, framework.NormalizeImageName(c.Image))
		}
	}
	state.Write(stateKey, s)
	return nil
}

// Score sums image sizes present on the node, weighted by spread.
func (ImageLocality) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	d, err := state.Read(stateKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	s := d.(*preScoreState)
	total := s.totalNodes
	if total == 0 {
		return 0, nil
	}
	var sum int64
	if len(ni.ImageStates) > 0 {
		for _, image := range s.images {
			if st, ok := ni.ImageStates[image]; ok {
				sum += int64(float64(st.Size) * float64(st.NumNodes) / float64(total))
			}
		}
	}
	maxThreshold := maxContainerThreshold * int64(max(len(s.images), 1))
	sum = min(max(sum, minThreshold), maxThreshold)
	return framework.MaxNodeScore * (sum - minThreshold) / (maxThreshold - minThreshold), nil
}

// ScoreExtensions: scores are already in range.
func (ImageLocality) ScoreExtensions() framework.ScoreExtensions { return nil }
