package stats

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the jiffies /proc/stat counts in (USER_HZ, 100 on every Linux ABI).
const userHZ = 100

// ParseProcStat returns the CPU time all CPUs spent busy, in nanoseconds, from the first line of
// /proc/stat: everything but idle and iowait (steal and guest are already in user/system).
func ParseProcStat(data []byte) (uint64, error) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: first line %q is not the cpu total", string(line))
	}
	var busy uint64
	for i, f := range fields[1:] {
		if i >= 8 { // guest and guest_nice are counted in user and nice already
			break
		}
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: field %d %q: %w", i+1, f, err)
		}
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		busy += v
	}
	return busy * (1e9 / userHZ), nil
}

// Meminfo is what the node's memory report needs from /proc/meminfo, in bytes.
type Meminfo struct {
	Total, Free, Available uint64
	// Anon is the anonymous memory (AnonPages): the node's resident set.
	Anon uint64
}

// ParseMeminfo reads /proc/meminfo.
func ParseMeminfo(data []byte) (Meminfo, error) {
	var m Meminfo
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		var dst *uint64
		switch fields[0] {
		case "MemTotal:":
			dst = &m.Total
		case "MemFree:":
			dst = &m.Free
		case "MemAvailable:":
			dst = &m.Available
		case "AnonPages:":
			dst = &m.Anon
		default:
			continue
		}
		kb, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			return m, fmt.Errorf("/proc/meminfo: %s %q: %w", fields[0], fields[1], err)
		}
		*dst = kb * 1024
		found++
	}
	if m.Total == 0 {
		return m, fmt.Errorf("/proc/meminfo: no MemTotal")
	}
	if m.Available == 0 {
		m.Available = m.Free
	}
	return m, nil
}

// Interface is one network interface's counters.
type Interface struct {
	Name                                 string
	RxBytes, RxErrors, TxBytes, TxErrors uint64
}

// ParseNetDev reads /proc/net/dev (of the reader's network namespace), skipping loopback.
func ParseNetDev(data []byte) ([]Interface, error) {
	var out []Interface
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue // the two header lines
		}
		name = strings.TrimSpace(name)
		fields := strings.Fields(rest)
		if name == "lo" || len(fields) < 11 {
			continue
		}
		var v [4]uint64
		for i, idx := range []int{0, 2, 8, 10} {
			n, err := strconv.ParseUint(fields[idx], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("/proc/net/dev: %s field %d %q: %w", name, idx, fields[idx], err)
			}
			v[i] = n
		}
		out = append(out, Interface{Name: name, RxBytes: v[0], RxErrors: v[1], TxBytes: v[2], TxErrors: v[3]})
	}
	return out, nil
}

// ParseBootTime returns the boot time from /proc/stat's btime line.
func ParseBootTime(data []byte) (time.Time, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 && fields[0] == "btime" {
			secs, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("/proc/stat: btime %q: %w", fields[1], err)
			}
			return time.Unix(secs, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("/proc/stat: no btime")
}
