package kubelet

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// MachineInfo is what the node reports about its host.
type MachineInfo struct {
	CPUs            int
	MemoryBytes     int64
	EphemeralBytes  int64
	KernelVersion   string
	OSImage         string
	MachineID       string
	SystemUUID      string
	BootID          string
	Architecture    string
	OperatingSystem string
	PrimaryIP       string
}

// DetectMachineInfo reads the host's facts; dataDir's filesystem is the
// ephemeral storage. Unreadable optional facts are left empty.
func DetectMachineInfo(dataDir string) (MachineInfo, error) {
	info := MachineInfo{CPUs: runtime.NumCPU(), Architecture: runtime.GOARCH, OperatingSystem: runtime.GOOS}
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return info, fmt.Errorf("machine info: %w", err)
	}
	info.MemoryBytes, err = memTotal(meminfo)
	if err != nil {
		return info, fmt.Errorf("machine info: %w", err)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dataDir, &fs); err == nil {
		info.EphemeralBytes = int64(fs.Blocks) * fs.Bsize
	}
	var uts syscall.Utsname
	if err := syscall.Uname(&uts); err == nil {
		info.KernelVersion = utsString(uts.Release[:])
	}
	info.OSImage = osImage()
	info.MachineID = readTrimmed("/etc/machine-id")
	info.SystemUUID = readTrimmed("/sys/class/dmi/id/product_uuid")
	info.BootID = readTrimmed("/proc/sys/kernel/random/boot_id")
	info.PrimaryIP = primaryIP()
	return info, nil
}

func memTotal(meminfo []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("MemTotal %q: %w", fields[1], err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no MemTotal in /proc/meminfo")
}

func utsString(field []int8) string {
	var b strings.Builder
	for _, c := range field {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}

func readTrimmed(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

func osImage() string {
	data, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return runtime.GOOS
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return runtime.GOOS
}

// primaryIP is the source address of the default route, found without
// sending anything (a UDP connect only selects a route).
func primaryIP() string {
	conn, err := net.Dial("udp4", "203.0.113.1:9")
	if err != nil {
		return ""
	}
	defer conn.Close()
	if addr, ok := conn.LocalAddr().(*net.UDPAddr); ok {
		return addr.IP.String()
	}
	return ""
}
