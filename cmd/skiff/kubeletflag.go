package main

import "github.com/skiff-sh/skiff/internal/cluster"

// kubeletFlag is --control-plane-kubelet: automatic when not given, a boolean flag otherwise
// (given alone it means true), and "auto" is accepted too.
type kubeletFlag struct{ p *cluster.KubeletSetting }

func (f kubeletFlag) String() string {
	if f.p == nil {
		return cluster.ControlPlaneKubeletAuto.String()
	}
	return f.p.String()
}

func (f kubeletFlag) Set(v string) error {
	s, err := cluster.ParseKubeletSetting(v)
	if err != nil {
		return err
	}
	*f.p = s
	return nil
}

// IsBoolFlag lets the flag stand alone, as the boolean flag it used to be.
func (f kubeletFlag) IsBoolFlag() bool { return true }
