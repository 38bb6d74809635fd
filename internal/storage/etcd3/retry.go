package etcd3

import (
	"bytes"
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A write whose answer was lost is sent again. When etcd's leadership moves (a member stopped
// for an upgrade transfers it), a proposal a follower forwarded to the old leader is dropped and
// the follower answers "request timed out" after its request timeout (7 s by default) without
// knowing whether the write was applied; the client sees a failed write though the cluster
// serves again a moment later. Every write of this store is a transaction guarded by a
// comparison on the key's revision, so sending the same transaction again applies it at most
// once: if the first one was applied after all, the comparison fails and the caller recognises
// its own bytes in the key (commit reports retried for that).

// writeRetryPauses are the pauses before each resend: a leader election takes about a second.
var writeRetryPauses = [...]time.Duration{250 * time.Millisecond, time.Second}

// RetryWrite decides whether a write that failed with err on attempt (0 for the first) is sent
// again, and after what pause: only when etcd could not say whether it was applied or refused it
// for want of a leader, while the request's deadline leaves time for the pause and an answer.
func RetryWrite(err error, attempt int, timeLeft time.Duration) (time.Duration, bool) {
	if attempt >= len(writeRetryPauses) || !outcomeUnknown(err) {
		return 0, false
	}
	pause := writeRetryPauses[attempt]
	if timeLeft < pause+time.Second {
		return 0, false
	}
	return pause, true
}

// outcomeUnknown reports etcd's answers that leave a write's fate open (timeouts, a leader change,
// a lost connection) or say it was not applied for want of a leader. Any other error (NOSPACE, a
// request too large, permission) would fail the same way again.
func outcomeUnknown(err error) bool {
	for _, e := range []error{
		rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail, rpctypes.ErrTimeoutDueToConnectionLost,
		rpctypes.ErrLeaderChanged, rpctypes.ErrNoLeader, rpctypes.ErrNotLeader,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// commit sends the transaction txn builds, again as RetryWrite decides; retried says an earlier
// attempt failed with its outcome unknown, so a failed comparison may be that attempt's doing.
func (s *Store) commit(ctx context.Context, txn func() clientv3.Txn) (resp *clientv3.TxnResponse, retried bool, err error) {
	for attempt := 0; ; attempt++ {
		resp, err = txn().Commit()
		if err == nil {
			return resp, attempt > 0, nil
		}
		timeLeft := time.Duration(1<<63 - 1)
		if deadline, ok := ctx.Deadline(); ok {
			timeLeft = time.Until(deadline)
		}
		pause, again := RetryWrite(err, attempt, timeLeft)
		if !again || ctx.Err() != nil {
			return nil, attempt > 0, err
		}
		s.log.Warn("etcd write's outcome unknown: sending it again", "attempt", attempt+1, "pause", pause, "err", err)
		select {
		case <-ctx.Done():
			return nil, true, err
		case <-s.clock.After(pause):
		}
	}
}

// ownWrite is the key's value in a failed comparison's answer (the transaction's Else get) when
// it is byte for byte what this write put, else nil.
func ownWrite(resp *clientv3.TxnResponse, put []byte) *mvccpb.KeyValue {
	if len(resp.Responses) == 0 {
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 || !bytes.Equal(kvs[0].Value, put) {
		return nil
	}
	return kvs[0]
}
