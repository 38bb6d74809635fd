package flowcontrol

import (
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// Defaults Kubernetes applies to flowcontrol.apiserver.k8s.io/v1 objects.
const (
	defaultMatchingPrecedence       int32 = 1000
	defaultNominalConcurrencyShares int32 = 30
	defaultQueues                   int32 = 64
	defaultHandSize                 int32 = 8
	defaultQueueLengthLimit         int32 = 50
)

// RegisterDefaults registers the flowcontrol.apiserver.k8s.io/v1 defaulting functions on s.
func RegisterDefaults(s *runtime.Scheme) error {
	if s == nil {
		return fmt.Errorf("register flowcontrol.apiserver.k8s.io/v1 defaults: nil scheme")
	}
	s.AddTypeDefaultingFunc(&flowcontrolv1.FlowSchema{}, func(o any) { DefaultFlowSchema(o.(*flowcontrolv1.FlowSchema)) })
	s.AddTypeDefaultingFunc(&flowcontrolv1.FlowSchemaList{}, func(o any) {
		l := o.(*flowcontrolv1.FlowSchemaList)
		for i := range l.Items {
			DefaultFlowSchema(&l.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&flowcontrolv1.PriorityLevelConfiguration{}, func(o any) {
		DefaultPriorityLevelConfiguration(o.(*flowcontrolv1.PriorityLevelConfiguration))
	})
	s.AddTypeDefaultingFunc(&flowcontrolv1.PriorityLevelConfigurationList{}, func(o any) {
		l := o.(*flowcontrolv1.PriorityLevelConfigurationList)
		for i := range l.Items {
			DefaultPriorityLevelConfiguration(&l.Items[i])
		}
	})
	return nil
}

// DefaultFlowSchema sets matchingPrecedence 1000 when it is unset (zero).
func DefaultFlowSchema(fs *flowcontrolv1.FlowSchema) {
	if fs.Spec.MatchingPrecedence == 0 {
		fs.Spec.MatchingPrecedence = defaultMatchingPrecedence
	}
}

// DefaultPriorityLevelConfiguration fills the limited level's shares (30), lendable percent (0)
// and queuing (64 queues, hand size 8, 50 per queue), and the exempt level's shares and lendable
// percent (0), as Kubernetes does.
func DefaultPriorityLevelConfiguration(pl *flowcontrolv1.PriorityLevelConfiguration) {
	if l := pl.Spec.Limited; l != nil {
		if l.NominalConcurrencyShares == nil {
			l.NominalConcurrencyShares = ptr.To(defaultNominalConcurrencyShares)
		}
		if l.LendablePercent == nil {
			l.LendablePercent = ptr.To[int32](0)
		}
		if q := l.LimitResponse.Queuing; q != nil {
			if q.Queues == 0 {
				q.Queues = defaultQueues
			}
			if q.HandSize == 0 {
				q.HandSize = defaultHandSize
			}
			if q.QueueLengthLimit == 0 {
				q.QueueLengthLimit = defaultQueueLengthLimit
			}
		}
	}
	if e := pl.Spec.Exempt; e != nil {
		if e.NominalConcurrencyShares == nil {
			e.NominalConcurrencyShares = ptr.To[int32](0)
		}
		if e.LendablePercent == nil {
			e.LendablePercent = ptr.To[int32](0)
		}
	}
}
