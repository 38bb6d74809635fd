package cri

import "testing"

func TestPidFromInfo(t *testing.T) {
	for _, tc := range []struct {
		name    string
		info    map[string]string
		want    int
		wantErr bool
	}{
		{name: "containerd's verbose info", info: map[string]string{"info": `{"sandboxID":"s","pid":4242,"removing":false}`}, want: 4242},
		{name: "an exited container names none", info: map[string]string{"info": `{"sandboxID":"s","pid":0}`}},
		{name: "a runtime without verbose info", info: nil},
		{name: "info that is not JSON", info: map[string]string{"info": "pid=4242"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pidFromInfo(tc.info)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("pidFromInfo = %d, %v; want %d (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
