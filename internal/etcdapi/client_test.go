package etcdapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestClientRoundTripsAndStatusErrors(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == MembersPath:
			_ = json.NewEncoder(w).Encode(MemberList{Quorum: true, LeaderID: "a", Members: []Member{{ID: "a", Name: "n1", Healthy: true}}})
		case r.Method == http.MethodPost && r.URL.Path == MembersPath:
			var req AddMemberRequest
			_ = json.NewDecoder(r.Body).Decode(&req)
			_ = json.NewEncoder(w).Encode(AddMemberResponse{Member: Member{ID: "b", Name: req.Name, IsLearner: true}, InitialCluster: "n1=https://a,n2=" + req.PeerURLs[0]})
		case r.Method == http.MethodPost && r.URL.Path == MembersPath+"/b"+PromoteSuffix:
			_ = json.NewEncoder(w).Encode(Member{ID: "b", Name: "n2"})
		default:
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"forbidden: no","reason":"Forbidden","code":403}`))
		}
	}))
	defer srv.Close()
	c := NewClientFromHTTP(srv.URL+"/", srv.Client())
	ctx := context.Background()
	list, err := c.List(ctx)
	if err != nil || !list.Quorum || list.Members[0].Name != "n1" {
		t.Fatalf("List = %+v, %v", list, err)
	}
	added, err := c.AddLearner(ctx, AddMemberRequest{Name: "n2", PeerURLs: []string{"https://b"}})
	if err != nil || added.Member.ID != "b" || !strings.Contains(added.InitialCluster, "n2=https://b") {
		t.Fatalf("AddLearner = %+v, %v", added, err)
	}
	if m, err := c.Promote(ctx, "b"); err != nil || m.ID != "b" {
		t.Fatalf("Promote = %+v, %v", m, err)
	}
	err = c.Remove(ctx, "c")
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusForbidden || !strings.Contains(err.Error(), "forbidden: no") {
		t.Fatalf("Remove = %v, want the server's 403 Status", err)
	}
	if want := "DELETE " + MembersPath + "/c"; seen[len(seen)-1] != want {
		t.Fatalf("last request %q, want %q", seen[len(seen)-1], want)
	}
}
