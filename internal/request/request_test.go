package request

import (
	"context"
	"testing"
)

func TestUserRoundTrip(t *testing.T) {
	if _, ok := UserFrom(context.Background()); ok {
		t.Fatal("user found in an empty context")
	}
	if _, ok := UserFrom(WithUser(context.Background(), nil)); ok {
		t.Fatal("nil user reported as present")
	}
	u := &UserInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	got, ok := UserFrom(WithUser(context.Background(), u))
	if !ok || got != u {
		t.Fatalf("UserFrom = %v, %v", got, ok)
	}
}
