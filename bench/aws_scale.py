"""Scale check of the sandbox's AWS side: one JSON line with provisioning and read latencies.

Run from the repository root: ``python -m bench.aws_scale [--nodes 1000] [--azs 3]``.
"""

import argparse
import json
import statistics
import sys
import tempfile
import time

from sandbox.aws import AwsSandbox
from sandbox.clock import Clock
from sandbox.events import EventLog


def _timed(fn, repeat):
    samples = []
    for _sample in range(repeat):
        start = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - start)
    return result, samples


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--azs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    clock = Clock(speed=1.0)
    events = EventLog(clock)
    with tempfile.TemporaryDirectory() as state_dir:
        aws = AwsSandbox(clock, events, state_dir, boot_seconds=40.0)
        start = time.perf_counter()
        aws.start()
        start_s = time.perf_counter() - start
        try:
            start = time.perf_counter()
            aws.provision(nodes=args.nodes, azs=args.azs)
            provision_s = time.perf_counter() - start
            client = aws.client("autoscaling")
            groups, describe = _timed(lambda: client.describe_auto_scaling_groups(AutoScalingGroupNames=["sandbox-nodes"]), args.repeat)
            instances, listing = _timed(aws.instances, max(args.repeat, 20))
            in_group = len(groups["AutoScalingGroups"][0]["Instances"])
        finally:
            aws.stop()
    print(json.dumps({
        "nodes": args.nodes,
        "azs": args.azs,
        "start_s": round(start_s, 3),
        "provision_s": round(provision_s, 3),
        "describe_auto_scaling_groups_s": {"median": round(statistics.median(describe), 4), "max": round(max(describe), 4)},
        "instances_s": {"median": round(statistics.median(listing), 5), "max": round(max(listing), 5)},
        "group_instances": in_group,
        "ec2_instances": len(instances),
    }, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
