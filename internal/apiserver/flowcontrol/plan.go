package flowcontrol

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// DefaultServerLimit is the server's total concurrency in seats: kube-apiserver's defaults of 400
// mutating plus 200 read-only requests in flight.
const DefaultServerLimit = 600

// Defaults Kubernetes gives a Limited level's fields when they are unset.
const (
	defaultNominalShares    = 30
	defaultQueues           = 64
	defaultHandSize         = 8
	defaultQueueLengthLimit = 50
)

// LevelPlan is what a priority level becomes: exempt, or a queue set with its limit.
type LevelPlan struct {
	Name, UID string
	Exempt    bool
	QueueSet  QueueSetConfig
}

// PlanLevels computes every level's plan from the objects: a Limited level's limit is
// ceil(serverLimit * its nominalConcurrencyShares / the sum of every level's shares), at least 1
// (Exempt levels' shares count in the sum, as in Kubernetes; they default to 0). Borrowing
// (lendablePercent, borrowingLimitPercent) is not applied: a level's limit is its nominal one.
func PlanLevels(levels []*flowcontrolv1.PriorityLevelConfiguration, serverLimit int) map[string]LevelPlan {
	if serverLimit <= 0 {
		serverLimit = DefaultServerLimit
	}
	sum := 0
	for _, pl := range levels {
		sum += shares(pl)
	}
	out := make(map[string]LevelPlan, len(levels))
	for _, pl := range levels {
		p := LevelPlan{Name: pl.Name, UID: string(pl.UID)}
		if pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt || pl.Spec.Limited == nil {
			p.Exempt = true
			out[pl.Name] = p
			continue
		}
		limit := 1
		if sum > 0 {
			limit = max(1, (serverLimit*shares(pl)+sum-1)/sum)
		}
		p.QueueSet = QueueSetConfig{Limit: limit}
		lr := pl.Spec.Limited.LimitResponse
		if lr.Type != flowcontrolv1.LimitResponseTypeReject {
			p.QueueSet.Queues, p.QueueSet.HandSize, p.QueueSet.QueueLengthLimit = defaultQueues, defaultHandSize, defaultQueueLengthLimit
			if q := lr.Queuing; q != nil {
				if q.Queues > 0 {
					p.QueueSet.Queues = int(q.Queues)
				}
				if q.HandSize > 0 {
					p.QueueSet.HandSize = int(q.HandSize)
				}
				if q.QueueLengthLimit > 0 {
					p.QueueSet.QueueLengthLimit = int(q.QueueLengthLimit)
				}
			}
		}
		out[pl.Name] = p
	}
	return out
}

func shares(pl *flowcontrolv1.PriorityLevelConfiguration) int {
	switch {
	case pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt || pl.Spec.Limited == nil:
		if pl.Spec.Exempt != nil && pl.Spec.Exempt.NominalConcurrencyShares != nil {
			return int(*pl.Spec.Exempt.NominalConcurrencyShares)
		}
		return 0
	case pl.Spec.Limited.NominalConcurrencyShares != nil:
		return int(*pl.Spec.Limited.NominalConcurrencyShares)
	}
	return defaultNominalShares
}

// ListSeats is the seats a LIST (or a watch's initial list) takes, estimated as Kubernetes' width
// estimator does: one seat per 100 objects it will go through (the resource's object count, or
// the limit when that is smaller and the list needs no filtering), at least 1 and at most 10.
func ListSeats(objects int64, limit int64, filtered bool) int {
	n := objects
	if limit > 0 && limit < n && !filtered {
		n = limit
	}
	seats := int((n + 99) / 100)
	return min(max(seats, 1), maxSeats)
}

// maxSeats caps a request's seats.
const maxSeats = 10
