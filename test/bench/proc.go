package bench

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Proc is what /proc says of a process at one moment.
type Proc struct {
	PID int
	// CPU is the process's user and system time, in seconds.
	CPU float64
	// RSS is its resident set (VmRSS) and PeakRSS that set's high-water mark
	// (VmHWM), in bytes.
	RSS, PeakRSS uint64
}

// userHZ is the unit of the times in /proc/<pid>/stat: USER_HZ, 100 on every
// Linux architecture Go runs on.
const userHZ = 100

// ReadProc reads a process's CPU time and memory from /proc.
func ReadProc(pid int) (Proc, error) {
	p := Proc{PID: pid}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return p, err
	}
	// The fields after the command name (in parentheses, which may hold
	// spaces) start at the third, the state; utime and stime are the 14th
	// and 15th.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return p, fmt.Errorf("cannot read /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 13 {
		return p, fmt.Errorf("cannot read /proc/%d/stat", pid)
	}
	for _, f := range fields[11:13] {
		ticks, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return p, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		p.CPU += float64(ticks) / userHZ
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return p, err
	}
	found := 0
	for line := range strings.SplitSeq(string(status), "\n") {
		var dst *uint64
		var v string
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			dst, v = &p.RSS, rest
		} else if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			dst, v = &p.PeakRSS, rest
		} else {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return p, fmt.Errorf("/proc/%d/status: %w", pid, err)
		}
		*dst = kb * 1024
		found++
	}
	if found != 2 {
		return p, errors.New("no VmRSS and VmHWM in /proc/<pid>/status")
	}
	return p, nil
}

// ResetPeakRSS sets a process's resident-set high-water mark (VmHWM) to its
// resident set now, so that the next reading is the peak from here on
// (proc(5), /proc/<pid>/clear_refs).
func ResetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// ProcArgs is a process's command line, its program first.
func ProcArgs(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00"), nil
}

// FlagValue is the last value given to flag name ("--kube-api-qps") on a
// command line, as --name=value or --name value.
func FlagValue(args []string, name string) (string, bool) {
	var v string
	var found bool
	for i, a := range args {
		if rest, ok := strings.CutPrefix(a, name+"="); ok {
			v, found = rest, true
		} else if a == name && i+1 < len(args) {
			v, found = args[i+1], true
		}
	}
	return v, found
}

// MachineCPU is the time the machine's CPUs have spent busy since boot, in
// seconds summed over the CPUs (see busyCPU).
func MachineCPU() (float64, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	return busyCPU(string(data))
}

// busyCPU reads /proc/stat's first line: every state but idle and iowait,
// and not guest and guest_nice, which user and nice count already.
func busyCPU(stat string) (float64, error) {
	line, _, _ := strings.Cut(stat, "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, errors.New("no cpu line in /proc/stat")
	}
	var busy uint64
	// user nice system idle iowait irq softirq steal guest guest_nice
	for i, f := range fields[1:] {
		ticks, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		if i == 3 || i == 4 || i >= 8 {
			continue
		}
		busy += ticks
	}
	return float64(busy) / userHZ, nil
}
