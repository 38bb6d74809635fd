package membershipapi

import "testing"

func TestRoute(t *testing.T) {
	tests := []struct {
		method, path string
		want         action
		wantID       uint64
		wantErr      bool
	}{
		{method: "GET", path: "/skiff/v1/etcd/members", want: actionList},
		{method: "GET", path: "/skiff/v1/etcd/members/", want: actionList},
		{method: "POST", path: "/skiff/v1/etcd/members", want: actionAdd},
		{method: "POST", path: "/skiff/v1/etcd/members/8e9e05c52164694d/promote", want: actionPromote, wantID: 0x8e9e05c52164694d},
		{method: "DELETE", path: "/skiff/v1/etcd/members/a1", want: actionRemove, wantID: 0xa1},
		{method: "DELETE", path: "/skiff/v1/etcd/members", wantErr: true},
		{method: "GET", path: "/skiff/v1/etcd/members/a1/promote", wantErr: true},
		{method: "POST", path: "/skiff/v1/etcd/members/a1/demote", wantErr: true},
		{method: "DELETE", path: "/skiff/v1/etcd/members/zz", wantErr: true},
		{method: "GET", path: "/skiff/v1/etcd/membersx", wantErr: true},
		{method: "DELETE", path: "/skiff/v1/etcd/members/a1/b/c", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			got, id, err := route(tt.method, tt.path)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("route = %v, %x, want an error", got, id)
				}
				return
			}
			if err != nil || got != tt.want || id != tt.wantID {
				t.Fatalf("route = %v, %x, %v; want %v, %x", got, id, err, tt.want, tt.wantID)
			}
		})
	}
}
