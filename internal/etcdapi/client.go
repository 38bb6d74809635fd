package etcdapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Client calls the membership endpoints of an API server.
type Client struct {
	host string
	http *http.Client
}

// NewClient builds a client from a kubeconfig's rest.Config (its credentials must be allowed the
// /skiff/v1/etcd/* non-resource URLs: cluster-admin or system:masters).
func NewClient(cfg *rest.Config) (*Client, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd membership client: %w", err)
	}
	return NewClientFromHTTP(cfg.Host, hc), nil
}

// NewClientFromHTTP builds a client over an http.Client that already carries credentials.
func NewClientFromHTTP(host string, hc *http.Client) *Client {
	return &Client{host: strings.TrimSuffix(host, "/"), http: hc}
}

// List returns the members with their status.
func (c *Client) List(ctx context.Context) (*MemberList, error) {
	out := &MemberList{}
	if err := c.do(ctx, http.MethodGet, MembersPath, nil, out); err != nil {
		return nil, fmt.Errorf("list etcd members: %w", err)
	}
	return out, nil
}

// AddLearner adds a learner member; the new member then starts with the response's InitialCluster
// and cluster state "existing", and is promoted with Promote once it caught up.
func (c *Client) AddLearner(ctx context.Context, req AddMemberRequest) (*AddMemberResponse, error) {
	out := &AddMemberResponse{}
	if err := c.do(ctx, http.MethodPost, MembersPath, req, out); err != nil {
		return nil, fmt.Errorf("add etcd learner %s: %w", req.Name, err)
	}
	return out, nil
}

// Promote makes learner id a voting member; the server retries while the learner catches up, up
// to its own bound, so a failure here is worth retrying later.
func (c *Client) Promote(ctx context.Context, id string) (*Member, error) {
	out := &Member{}
	if err := c.do(ctx, http.MethodPost, MembersPath+"/"+id+PromoteSuffix, nil, out); err != nil {
		return nil, fmt.Errorf("promote etcd member %s: %w", id, err)
	}
	return out, nil
}

// Remove removes member id from the cluster.
func (c *Client) Remove(ctx context.Context, id string) error {
	if err := c.do(ctx, http.MethodDelete, MembersPath+"/"+id, nil, nil); err != nil {
		return fmt.Errorf("remove etcd member %s: %w", id, err)
	}
	return nil
}

// StatusError is a non-2xx answer, carrying the server's Status.
type StatusError struct {
	Code   int
	Status metav1.Status
}

func (e *StatusError) Error() string {
	if e.Status.Message != "" {
		return fmt.Sprintf("%d: %s", e.Code, e.Status.Message)
	}
	return fmt.Sprintf("%d %s", e.Code, http.StatusText(e.Code))
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.host+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		se := &StatusError{Code: resp.StatusCode}
		if json.Unmarshal(data, &se.Status) != nil || se.Status.Message == "" {
			se.Status.Message = strings.TrimSpace(string(data))
		}
		return se
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}
