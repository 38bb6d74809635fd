package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/skiff-sh/skiff/internal/etcdapi"
)

// restartLockKey is the etcd lock members hold while one of them restarts (RestartInTurn).
const restartLockKey = "/skiff/etcd/member-restart"

// restartLockTTL is the lock's lease: longer than a member's restart, so the lease outlives the
// moment its holder's own member, through which it keeps the lease alive, is down.
const restartLockTTL = 60

// RestartInTurn restarts the member (Restart) while it holds a lock in etcd that every member's
// restart takes, and only when every member of the cluster is healthy (restartSafe): the members
// of a cluster restart one at a time, each after the one before serves again, so the cluster
// keeps its quorum. client is the node's own client of this member (its API server's): while the
// member restarts, client's endpoints are the other members' client URLs, so the API server's new
// requests go there while the member lets its open streams (watches) run to its request timeout,
// 7 s, and stops; the watches then resume on the other members.
func (m *Member) RestartInTurn(ctx context.Context, client *clientv3.Client) error {
	session, err := concurrency.NewSession(client, concurrency.WithTTL(restartLockTTL), concurrency.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("etcd member %s: restart lock session: %w", m.cfg.Name, err)
	}
	defer session.Close()
	lock := concurrency.NewMutex(session, restartLockKey)
	if err := lock.Lock(ctx); err != nil {
		return fmt.Errorf("etcd member %s: take the restart lock: %w", m.cfg.Name, err)
	}
	defer func() {
		unlockCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultRequestTimeout)
		defer cancel()
		_ = lock.Unlock(unlockCtx) // the lease's end releases it otherwise
	}()
	list, err := ListMembers(ctx, client)
	if err != nil {
		return err
	}
	if err := restartSafe(list.Members); err != nil {
		return fmt.Errorf("etcd member %s not restarted now: %w", m.cfg.Name, err)
	}
	// A member alone has no other to lend its client: its API server waits for it (etcd gives
	// open streams its request timeout, 7 s, to end before it stops; a client cannot end them
	// sooner, as gRPC lets the streams of a connection it leaves finish).
	if others := otherClientURLs(list.Members, m.cfg.Name); len(others) > 0 {
		own := client.Endpoints()
		client.SetEndpoints(others...)
		defer client.SetEndpoints(own...)
	}
	return m.Restart(ctx)
}

// otherClientURLs are the client URLs of the voting members other than the one named self (pure).
func otherClientURLs(members []etcdapi.Member, self string) []string {
	var out []string
	for _, m := range members {
		if m.Name != self && !m.IsLearner {
			out = append(out, m.ClientURLs...)
		}
	}
	return out
}

// restartSafe says whether a member may restart now (pure): every voting member answers with a
// leader, so the cluster keeps its quorum while one is down.
func restartSafe(members []etcdapi.Member) error {
	var unhealthy []string
	for _, m := range members {
		if m.IsLearner {
			continue
		}
		if !m.Healthy {
			name := m.Name
			if name == "" {
				name = m.ID
			}
			if m.Error != "" {
				name += " (" + m.Error + ")"
			}
			unhealthy = append(unhealthy, name)
		}
	}
	if len(unhealthy) > 0 {
		return fmt.Errorf("members not healthy: %s", strings.Join(unhealthy, ", "))
	}
	if len(members) == 0 {
		return errors.New("no members listed")
	}
	return nil
}
