package gate

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
)

// Condition is a parsed successCondition: sample Index compared by Op with
// Value. It is data, never evaluated as code.
type Condition struct {
	Index int
	Op    string
	Value float64
}

var conditionRE = regexp.MustCompile(`^\s*result(?:\[(\d{1,3})\])?\s*(<=|>=|==|!=|<|>)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$`)

// ParseCondition reads "result OP NUMBER" or "result[N] OP NUMBER".
func ParseCondition(s string) (Condition, error) {
	m := conditionRE.FindStringSubmatch(s)
	if m == nil {
		return Condition{}, fmt.Errorf("%q is not a comparison: want result OP NUMBER or result[N] OP NUMBER, OP one of < <= > >= == !=", s)
	}
	c := Condition{Op: m[2]}
	if m[1] != "" {
		c.Index, _ = strconv.Atoi(m[1])
	}
	v, err := strconv.ParseFloat(m[3], 64)
	if err != nil {
		return Condition{}, fmt.Errorf("%q: %w", s, err)
	}
	c.Value = v
	return c, nil
}

// Met compares the condition's sample of samples; ok is false when there is
// no such sample or it is NaN (nothing to compare: inconclusive).
func (c Condition) Met(samples []float64) (met bool, value float64, ok bool) {
	if c.Index >= len(samples) || math.IsNaN(samples[c.Index]) {
		return false, 0, false
	}
	v := samples[c.Index]
	switch c.Op {
	case "<":
		met = v < c.Value
	case "<=":
		met = v <= c.Value
	case ">":
		met = v > c.Value
	case ">=":
		met = v >= c.Value
	case "==":
		met = v == c.Value
	case "!=":
		met = v != c.Value
	}
	return met, v, true
}
