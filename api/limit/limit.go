// Package limit is the one rule for the API's int-or-percent fields, on both
// halves of Lockstep (the operator's PodCliqueSet limits and the hub's
// FederatedWorkload and Placement fields): what an unset limit means, how a
// value resolves against a count, and what admission accepts. A value means
// the same and gets the same verdict wherever it is written.
//
// It lives under api/ because the API's own defaulting uses it; it imports
// nothing of Lockstep.
package limit

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The defaults of an unset maxUnavailable and maxSurge, at every level of both
// halves: one unit at a time, no extra units.
const (
	DefaultMaxUnavailable int32 = 1
	DefaultMaxSurge       int32 = 0
)

// Rounding is how a percentage of a count becomes a whole number of units.
type Rounding int

const (
	// Down is maxUnavailable's rounding: a percentage never lets more units go
	// than asked.
	Down Rounding = iota
	// Up is maxSurge's and a target's (updateTo, clustersPerDecisionGroup): any
	// percentage above 0% means at least one unit.
	Up
)

// Resolve is v as a number of units of count: an integer as written, a
// percentage of count rounded r. It fails exactly for the values Validate
// rejects as malformed or negative. A negative count counts as 0; results
// above math.MaxInt32 are capped.
func Resolve(v intstr.IntOrString, count int32, r Rounding) (int32, error) {
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return 0, fmt.Errorf("%d is negative", v.IntVal)
		}
		return v.IntVal, nil
	}
	pct, ok := percent(v.StrVal)
	if !ok {
		return 0, fmt.Errorf("%q is neither an integer nor a percentage", v.StrVal)
	}
	n := int64(max(count, 0)) * int64(pct)
	if r == Up {
		n += 99
	}
	return int32(min(n/100, math.MaxInt32)), nil
}

// Defaulted is maxUnavailable and maxSurge with the defaults in place of unset
// ones: the one place an unset limit gets its meaning.
func Defaulted(maxUnavailable, maxSurge *intstr.IntOrString) (intstr.IntOrString, intstr.IntOrString) {
	mu, ms := intstr.FromInt32(DefaultMaxUnavailable), intstr.FromInt32(DefaultMaxSurge)
	if maxUnavailable != nil {
		mu = *maxUnavailable
	}
	if maxSurge != nil {
		ms = *maxSurge
	}
	return mu, ms
}

// Budget is a level's maxSurge and maxUnavailable in units.
type Budget struct {
	// MaxSurge is how many units may exist above replicas.
	MaxSurge int32
	// MaxUnavailable is how many of replicas may be unavailable.
	MaxUnavailable int32
}

// ResolveBudget resolves maxUnavailable (rounding down) and maxSurge (rounding
// up) against replicas, unset ones taking the defaults. When both come to 0
// (say 10% of 5 with no surge) maxUnavailable becomes 1, as a Deployment's
// does: a rollout must be able to move.
func ResolveBudget(maxUnavailable, maxSurge *intstr.IntOrString, replicas int32) (Budget, error) {
	mu, ms := Defaulted(maxUnavailable, maxSurge)
	surge, err := Resolve(ms, replicas, Up)
	if err != nil {
		return Budget{}, fmt.Errorf("resolving maxSurge: %w", err)
	}
	unavailable, err := Resolve(mu, replicas, Down)
	if err != nil {
		return Budget{}, fmt.Errorf("resolving maxUnavailable: %w", err)
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return Budget{MaxSurge: surge, MaxUnavailable: unavailable}, nil
}

// IsPercent reports whether v is written as a percentage.
func IsPercent(v intstr.IntOrString) bool { return v.Type == intstr.String }

// IsZero reports whether v is written as 0 or 0%: zero whatever the count.
func IsZero(v intstr.IntOrString) bool {
	if v.Type == intstr.Int {
		return v.IntVal == 0
	}
	pct, ok := percent(v.StrVal)
	return ok && pct == 0
}

// The rules, in the words both webhooks answer with.
const (
	ruleNotANumber   = `must be an integer or a percentage such as "25%"`
	ruleNegative     = "must be greater than or equal to 0"
	ruleAbove100     = "must not be more than 100%"
	ruleBothZero     = "maxUnavailable and maxSurge cannot both be 0: nothing could ever be updated"
	ruleOverReplicas = "must not exceed replicas (%d)"
	ruleTargetBelow1 = "must be at least 1"
	ruleTargetRange  = "a percentage must be in (0%, 100%]"
)

// Validate checks a level's maxUnavailable and maxSurge (children "maxUnavailable"
// and "maxSurge" of p) against its replicas, an unset limit being its default:
//   - each is an integer ≥ 0 or a percentage "N%";
//   - maxUnavailable is at most 100% and, as an integer, at most replicas (with
//     no replicas there is nothing to update, so the default 1 stays valid);
//   - they are not both 0 (written as 0 or 0%), or nothing could be updated.
//
// maxSurge may be above 100%, as a Deployment's may: surge only adds units on
// top of replicas, so "200%" (three times the units during an update) is a
// choice of capacity, not a typo. Both halves follow this rule.
func Validate(p *field.Path, maxUnavailable, maxSurge *intstr.IntOrString, replicas int32) field.ErrorList {
	up, sp := p.Child("maxUnavailable"), p.Child("maxSurge")
	mu, ms := Defaulted(maxUnavailable, maxSurge)
	errs := validateLimit(up, mu)
	if pct, ok := percent(mu.StrVal); IsPercent(mu) && ok && pct > 100 {
		errs = append(errs, field.Invalid(up, mu.StrVal, ruleAbove100))
	}
	errs = append(errs, validateLimit(sp, ms)...)
	switch {
	case len(errs) > 0:
	case !IsPercent(mu) && replicas > 0 && mu.IntVal > replicas:
		errs = append(errs, field.Invalid(up, mu.IntVal, fmt.Sprintf(ruleOverReplicas, replicas)))
	case IsZero(mu) && IsZero(ms):
		errs = append(errs, field.Invalid(up, value(mu), ruleBothZero))
	}
	return errs
}

// validateLimit checks one limit's form and sign.
func validateLimit(p *field.Path, v intstr.IntOrString) field.ErrorList {
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return field.ErrorList{field.Invalid(p, v.IntVal, ruleNegative)}
		}
		return nil
	}
	if _, ok := percent(v.StrVal); !ok {
		return field.ErrorList{field.Invalid(p, v.StrVal, ruleNotANumber)}
	}
	return nil
}

// ValidateTarget checks a target such as updateTo or clustersPerDecisionGroup:
// an integer of at least 1, or a percentage in (0%, 100%] written without
// leading zeros, as the CRDs' schema rule has it.
func ValidateTarget(p *field.Path, v intstr.IntOrString) field.ErrorList {
	if v.Type == intstr.Int {
		if v.IntVal < 1 {
			return field.ErrorList{field.Invalid(p, v.IntVal, ruleTargetBelow1)}
		}
		return nil
	}
	pct, ok := percent(v.StrVal)
	if !ok || v.StrVal != strconv.Itoa(int(pct))+"%" {
		return field.ErrorList{field.Invalid(p, v.StrVal, ruleNotANumber)}
	}
	if pct < 1 || pct > 100 {
		return field.ErrorList{field.Invalid(p, v.StrVal, ruleTargetRange)}
	}
	return nil
}

// percent parses "N%", N being decimal digits (a Deployment's syntax) that fit
// an int32.
func percent(s string) (int32, bool) {
	num, ok := strings.CutSuffix(s, "%")
	if !ok || num == "" || strings.TrimLeft(num, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(num, 10, 32)
	return int32(n), err == nil
}

// value is v as an error shows it: a number or a string.
func value(v intstr.IntOrString) any {
	if v.Type == intstr.Int {
		return v.IntVal
	}
	return v.StrVal
}
