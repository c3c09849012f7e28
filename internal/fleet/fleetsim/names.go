package fleetsim

import (
	"fmt"
	"strconv"
	"strings"
)

// ClusterNames expands ranges such as "001-100" into cluster001..cluster100,
// and a single number into one name: zero-padded, so that plain string order
// is numeric order, as the worked examples read.
func ClusterNames(ranges ...string) []string {
	var out []string
	for _, r := range ranges {
		from, to, found := strings.Cut(r, "-")
		if !found {
			to = from
		}
		a, _ := strconv.Atoi(from)
		b, _ := strconv.Atoi(to)
		for i := a; i <= b; i++ {
			out = append(out, fmt.Sprintf("cluster%03d", i))
		}
	}
	return out
}
