"""What every benchmark measures with: nearest-rank percentiles and a process's CPU and memory from /proc."""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Sequence
from pathlib import Path


def pct(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def rss_mib(pid: int, key: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def written_bytes(pid: int) -> int:
    """Bytes a process has caused to be written to storage (``write_bytes`` of /proc/PID/io)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    return 0


def cpu_when_idle(pid: int, deadline_s: float) -> float:
    """The process's CPU seconds once it has gone idle (under 5 % of a core over each of two half-seconds in a row),
    or when ``deadline_s`` has passed: what it does after the requests returned (its controllers' follow-up work)
    is done by then."""
    deadline = time.monotonic() + deadline_s
    quiet = 0
    last = cpu_seconds(pid)
    while quiet < 2 and time.monotonic() < deadline:
        time.sleep(0.5)  # a sampling interval: the process's CPU is what is polled
        now = cpu_seconds(pid)
        quiet = quiet + 1 if now - last < 0.025 else 0
        last = now
    return last


def machine_idle() -> tuple[int, int]:
    """The machine's idle and total CPU time so far (clock ticks of /proc/stat's ``cpu`` line, iowait counted
    as idle): the difference of two readings gives the share of the cores nothing used in between."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return ticks[3] + ticks[4], sum(ticks)


def children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def tree_cpu_seconds(pid: int) -> float:
    """CPU of a process and its children (e.g. a simulator spread over several processes)."""
    return cpu_seconds(pid) + sum(tree_cpu_seconds(child) for child in children(pid))


def self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def tree_rss_mib(pid: int) -> float:
    """Resident memory of a process and its children, summed (shared pages are counted in each)."""
    return rss_mib(pid) + sum(tree_rss_mib(child) for child in children(pid))
