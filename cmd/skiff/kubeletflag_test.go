package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/skiff-sh/skiff/internal/cluster"
)

// --control-plane-kubelet is automatic when not given and stays usable as the boolean flag it was.
func TestKubeletFlag(t *testing.T) {
	tests := []struct {
		args    []string
		want    cluster.KubeletSetting
		wantErr string
	}{
		{args: nil, want: cluster.ControlPlaneKubeletAuto},
		{args: []string{"--control-plane-kubelet"}, want: cluster.ControlPlaneKubeletOn},
		{args: []string{"--control-plane-kubelet=true"}, want: cluster.ControlPlaneKubeletOn},
		{args: []string{"--control-plane-kubelet=false"}, want: cluster.ControlPlaneKubeletOff},
		{args: []string{"-control-plane-kubelet=0"}, want: cluster.ControlPlaneKubeletOff},
		{args: []string{"--control-plane-kubelet=auto"}, want: cluster.ControlPlaneKubeletAuto},
		{args: []string{"--control-plane-kubelet=sometimes"}, wantErr: "want true, false or auto"},
	}
	for _, tt := range tests {
		var got cluster.KubeletSetting
		var out bytes.Buffer
		fs := flag.NewFlagSet("skiff server", flag.ContinueOnError)
		fs.SetOutput(&out)
		fs.Var(kubeletFlag{&got}, "control-plane-kubelet", "")
		err := fs.Parse(tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: error %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%v: %q, %v; want %q", tt.args, got, err, tt.want)
		}
		if fs.NArg() != 0 {
			t.Errorf("%v: left arguments %v", tt.args, fs.Args())
		}
	}
}
