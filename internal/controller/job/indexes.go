package job

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// parseIndexes reads a completedIndexes string ("1,3-5,7") into a set,
// ignoring malformed parts and indexes >= limit.
func parseIndexes(s string, limit int) map[int]bool {
	out := map[int]bool{}
	if s == "" {
		return out
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for i := first; i <= last && i < limit; i++ {
			out[i] = true
		}
	}
	return out
}

// formatIndexes writes a set of indexes as Kubernetes does: sorted, with
// runs of three or more consecutive indexes collapsed into "a-b" and a pair
// written "a,b" (clients and conformance specs compare the exact string).
func formatIndexes(set map[int]bool) string {
	idx := make([]int, 0, len(set))
	for i := range set {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var parts []string
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		switch j - i {
		case 0:
			parts = append(parts, strconv.Itoa(idx[i]))
		case 1:
			parts = append(parts, strconv.Itoa(idx[i]), strconv.Itoa(idx[j]))
		default:
			parts = append(parts, fmt.Sprintf("%d-%d", idx[i], idx[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
