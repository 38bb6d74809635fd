// Package flowcontrol is the API server's API Priority and Fairness (KEP-1040), written from the
// flowcontrol.apiserver.k8s.io/v1 objects' documented behaviour.
//
// It owns:
//   - classification of a request (user, groups, request attributes) into a FlowSchema, by
//     matchingPrecedence then name, and the flow it belongs to (distinguisherMethod);
//   - each priority level's concurrency limit (its share of the server's total) and, for Limited
//     levels with queuing, a QueueSet: a pure state machine (enqueue, dispatch, finish, cancel, with
//     time passed in) that shuffle-shards flows onto queues and dispatches between queues by
//     start-time fair queuing on seats;
//   - the Controller that applies those decisions to live requests (waiting, 429 rejections,
//     metrics) and follows the FlowSchema and PriorityLevelConfiguration objects through informers;
//   - each FlowSchema's Dangling status condition (whether the priority level it names exists):
//     DanglingStatus plans the writes, the Controller makes them through the StatusWriter the API
//     server gives it.
//
// It must not write HTTP responses (the API server turns a Rejection into a 429 Status), import
// the API server's HTTP layer, storage or etcd, nor keep package-level mutable state. Borrowing
// between levels (lendablePercent, borrowingLimitPercent) is not implemented.
package flowcontrol
