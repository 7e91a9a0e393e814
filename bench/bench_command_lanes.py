"""Benchmark the command lane executor: 8 lanes in parallel threads, as a review runs them.

Two workloads: ``true`` (pure overhead: spawn, supervise, sweep, reap) and
``sleep 1`` (overhead on top of a fixed second). Each is timed 5 times; the table
shows the median wall time for the batch and the overhead per lane.

    .venv/bin/python bench/bench_command_lanes.py [--lanes 8] [--repeat 5]

The first lane of the process also starts the lane watchdog; one warm-up batch
runs before timing so that cost (paid once per host) is reported separately.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agentreview_command.executor import CommandLaneExecutor

from agentreview.model.contracts import LaneRequest
from agentreview.model.manifest import CommandCheck


def _request(command: str, root: Path) -> LaneRequest:
    return LaneRequest(
        check=CommandCheck(id="bench", kind="command", run=command, timeoutMs=60_000),
        review_id="bench",
        repo_root=root,
        base_sha="a" * 40,
        head_sha="b" * 40,
        placeholders={},
        run_dir=root,
        cancel=threading.Event(),
        command=command,
    )


def _batch(executor: CommandLaneExecutor, command: str, lanes: int, root: Path) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=lanes) as pool:
        outcomes = list(pool.map(executor.run_lane, [_request(command, root) for _ in range(lanes)]))
    elapsed = time.perf_counter() - started
    bad = [o for o in outcomes if o.kind != "exited" or o.exit_code != 0]
    if bad:
        raise SystemExit(f"bench lane failed: {bad[0]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    executor = CommandLaneExecutor()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ.setdefault("AGENTREVIEW_HOME", str(root / "home"))
        first = time.perf_counter()
        executor.run_lane(_request("true", root))
        first_ms = (time.perf_counter() - first) * 1000
        print(f"first lane of the process (starts the watchdog): {first_ms:.1f} ms")
        print(f"{'workload':<12}{'lanes':>6}{'median batch':>16}{'min':>10}{'max':>10}{'overhead/lane':>16}")
        for command, floor_s in (("true", 0.0), ("sleep 1", 1.0)):
            _batch(executor, command, args.lanes, root)  # warm-up
            times = [_batch(executor, command, args.lanes, root) for _ in range(args.repeat)]
            median = statistics.median(times)
            per_lane_ms = (median - floor_s) * 1000 / args.lanes
            print(
                f"{command:<12}{args.lanes:>6}{median * 1000:>13.1f} ms{min(times) * 1000:>7.1f} ms"
                f"{max(times) * 1000:>7.1f} ms{per_lane_ms:>13.2f} ms"
            )
        sequential = []
        for _ in range(20):  # no thread pool: the executor's own cost for one lane
            started = time.perf_counter()
            executor.run_lane(_request("true", root))
            sequential.append(time.perf_counter() - started)
        print(f"one 'true' lane at a time: median {statistics.median(sequential) * 1000:.2f} ms per lane")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
