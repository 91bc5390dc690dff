package main

import "golang.org/x/sys/unix"

// processCPUNanos is the CPU time process pid has used, all its threads, user
// and system, in ns: clock_gettime on the process's CPU-time clock
// (MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED), what clock_getcpuclockid
// returns), the scheduler's exact runtime. /proc/PID/stat reports the same
// total rounded to 10 ms ticks, too coarse for a short burst at c=1 or for the
// cold pass (a few ms of CPU per round).
func processCPUNanos(pid int) (int64, error) {
	const cpuClockSched = 2
	clock := int32((^pid)<<3 | cpuClockSched)
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}
