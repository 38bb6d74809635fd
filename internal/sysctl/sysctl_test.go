package sysctl

import "testing"

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"net.ipv4.ip_forward":              "net.ipv4.ip_forward",
		"net/ipv4/ip_forward":              "net.ipv4.ip_forward",
		"net/ipv4/conf/eth0.100/rp_filter": "net.ipv4.conf.eth0/100.rp_filter",
		"net.ipv4.conf.eth0/100.rp_filter": "net.ipv4.conf.eth0/100.rp_filter",
		"kernel":                           "kernel",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNamespaceOf(t *testing.T) {
	for in, want := range map[string]Namespace{
		"kernel.sem": IPC, "kernel.shmmax": IPC, "kernel.msg*": IPC, "fs.mqueue.msg_max": IPC,
		"net.core.somaxconn": Net, "net.*": Net,
		"kernel.pid_max": "", "vm.swappiness": "",
	} {
		if got := NamespaceOf(in); got != want {
			t.Errorf("NamespaceOf(%q) = %q, want %q", in, got, want)
		}
	}
}
