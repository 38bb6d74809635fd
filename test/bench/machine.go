package bench

import (
	"bufio"
	"os"
	"runtime"
	"strings"
)

// Machine describes where figures were measured.
type Machine struct {
	CPUs     int
	CPUModel string
	GoOS     string
	GoArch   string
}

// DescribeMachine reads the CPU count and model (from /proc/cpuinfo when present).
func DescribeMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), CPUModel: "unknown", GoOS: runtime.GOOS, GoArch: runtime.GOARCH}
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return m
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == "model name" {
			m.CPUModel = strings.TrimSpace(value)
			break
		}
	}
	return m
}

func (m Machine) String() string {
	return m.CPUModel + ", " + itoa(m.CPUs) + " CPUs (nproc), " + m.GoOS + "/" + m.GoArch
}
