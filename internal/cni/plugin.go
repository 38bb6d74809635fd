package cni

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// IsPluginName reports whether a program invoked as name (argv[0]) is meant to run as the
// plugin: containerd runs the CNI bin dir's links named after the types.
func IsPluginName(name string) bool {
	return filepath.Base(name) == Type
}

// Main runs one plugin call: the CNI_* variables from getenv, the network config on stdin, the
// result (or a CNI error) on stdout. It returns the exit status.
func Main(getenv func(string) string, stdin io.Reader, stdout io.Writer) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := call(ctx, getenv, stdin)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Code: codeInternal, Msg: "skiff-bridge failed", Details: err.Error()}
		}
		_ = json.NewEncoder(stdout).Encode(e)
		return 1
	}
	if out != nil {
		if err := json.NewEncoder(stdout).Encode(out); err != nil {
			return 1
		}
	}
	return 0
}

func call(ctx context.Context, getenv func(string) string, stdin io.Reader) (any, error) {
	a, err := ParseArgs(getenv)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(stdin)
	if err != nil {
		return nil, errorf(codeDecode, "read network config", "%v", err)
	}
	if a.Command == "VERSION" {
		var v struct {
			CNIVersion string `json:"cniVersion"`
		}
		_ = json.Unmarshal(raw, &v)
		return VersionResult(v.CNIVersion), nil
	}
	n, err := ParseConf(raw)
	if err != nil {
		return nil, err
	}
	h, err := newHost()
	if err != nil {
		return nil, err
	}
	defer h.close()
	return h.run(ctx, n, a, raw)
}

// run carries out ADD, DEL or CHECK for the bridge network.
func (h *host) run(ctx context.Context, n Network, a Args, raw []byte) (any, error) {
	leases, err := newLeaseStore(n.Conf.StateDir, n.Conf.Name)
	if err != nil {
		return nil, err
	}
	who := holder(a.ContainerID, a.IfName)
	switch a.Command {
	case "ADD":
		br, err := h.ensureBridge(ctx, n)
		if err != nil {
			return nil, err
		}
		addrs, err := leases.acquire(n.Ranges, who)
		if err != nil {
			return nil, err
		}
		links, err := h.attach(br, n, a, addrs)
		if err != nil {
			_ = h.detach(a)
			_ = leases.release(who)
			return nil, err
		}
		result, err := BuildResult(n.Conf.CNIVersion, n, a, links.bridgeMAC, links.hostMAC, links.podMAC, addrs)
		if err != nil {
			return nil, err
		}
		if len(n.Conf.RuntimeConfig.PortMappings) > 0 {
			if err := h.portmap(ctx, n, a, raw, result); err != nil {
				_ = h.detach(a)
				_ = leases.release(who)
				return nil, err
			}
		}
		return result, nil
	case "DEL":
		var errs []error
		if len(n.Conf.RuntimeConfig.PortMappings) > 0 {
			errs = append(errs, h.portmap(ctx, n, a, raw, nil))
		}
		errs = append(errs, h.detach(a), leases.release(who))
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		return nil, nil
	case "CHECK":
		addrs, ok, err := leases.lookup(n.Ranges, who)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errorf(codeInternal, "check failed", "no address leased to %s", who)
		}
		if err := h.check(n, a, addrs); err != nil {
			return nil, errorf(codeInternal, "check failed", "%v", err)
		}
		if len(n.Conf.RuntimeConfig.PortMappings) > 0 {
			return nil, h.portmap(ctx, n, a, raw, nil)
		}
		return nil, nil
	}
	return nil, errorf(codeInvalidEnvironment, "invalid environment", "unknown CNI_COMMAND %q", a.Command)
}

// portmap runs the portmap plugin for a pod with hostPorts, chained after this plugin: the same
// call with portmap's type and this plugin's result as prevResult.
func (h *host) portmap(ctx context.Context, n Network, a Args, raw []byte, prev any) error {
	if n.Conf.PortmapPath == "" {
		return errorf(codeInvalidConfig, "invalid network config", "hostPorts requested but no portmapPath configured")
	}
	var conf map[string]any
	if err := json.Unmarshal(raw, &conf); err != nil {
		return errorf(codeDecode, "decode network config", "%v", err)
	}
	conf["type"] = "portmap"
	conf["capabilities"] = map[string]bool{"portMappings": true}
	for _, own := range []string{"bridge", "subnets", "stateDir", "mtu", "hairpinMode", "ipMasq", "portmapPath"} {
		delete(conf, own)
	}
	if prev != nil {
		conf["prevResult"] = prev
	}
	in, err := json.Marshal(conf)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, n.Conf.PortmapPath)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Env = append(os.Environ(), "CNI_COMMAND="+a.Command, "CNI_CONTAINERID="+a.ContainerID, "CNI_NETNS="+a.Netns, "CNI_IFNAME="+a.IfName, "CNI_PATH="+filepath.Dir(n.Conf.PortmapPath))
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		var e Error
		if json.Unmarshal(out.Bytes(), &e) == nil && e.Msg != "" {
			return &Error{Code: e.Code, Msg: "portmap: " + e.Msg, Details: e.Details}
		}
		return fmt.Errorf("portmap %s: %w: %s", a.Command, err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}
