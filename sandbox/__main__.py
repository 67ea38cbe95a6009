"""Command line of the sandbox.

    python -m sandbox up --state-dir DIR [--nodes 6] [--azs 3] [--groups 1] [--speed F] [--detach]
                         [--kube embedded|reference [--rbac [--rbac-file FILE]]] [--workload FILE ...]
                         [--startup-taint KEY[=VALUE]:EFFECT[@SECONDS|@never] ...] [--alertmanager] [--pushgateway]
    python -m sandbox down --state-dir DIR
    python -m sandbox report --state-dir DIR [--client-prefix nodeops.rollout]
    python -m sandbox fault --state-dir DIR [--aws-throttle ACTION=RATE] [--aws-5xx ACTION=RATE]
                            [--k8s-429 VERB=RATE] [--k8s-5xx VERB=RATE] [--k8s-down SECONDS] [--insufficient-capacity AZ]
                            [--k8s-forbid RESOURCE=VERB[,VERB]]
                            [--nodes-never-ready | --nodes-ready] [--eviction-latency SECONDS] [--unreachable-node NODE]
                            [--seed N] [--clear]
    python -m sandbox startup-taints --state-dir DIR [--group G [--version N] [--taint KEY[=VALUE]:EFFECT[@SECONDS|@never] ...]]
                                     [--user-data-lift KEY=SECONDS|never ...]
    python -m sandbox apply --state-dir DIR FILE [FILE ...]
    python -m sandbox show --state-dir DIR

Run it from the repository root (``sandbox`` is a package there). Everything binds 127.0.0.1 only. Two
sandboxes with different state directories run side by side. Faults add up: each ``fault`` command changes
only what it names (``ACTION=0`` removes one rate, ``--insufficient-capacity ''`` empties the AZ list);
``--clear`` resets every fault first.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

from .events import read_events
from .kube.faults import VERBS as K8S_VERBS
from .report import build_report, dumps

STATE_FILE = "sandbox.json"
MAX_AZS = 6


def _state(state_dir):
    path = os.path.join(state_dir, STATE_FILE)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a zombie child of ours is not alive
        return os.waitpid(pid, os.WNOHANG)[0] == 0
    except ChildProcessError:
        pass
    try:  # nor is anyone else's zombie (a detached sandbox is reaped by init, at its own pace)
        with open("/proc/%d/stat" % pid, encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _post(url, body, timeout=30):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # nosec - loopback control endpoint
            return json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as exc:   # the sandbox refused the request: say why, as it said it
        try:
            reason = json.loads(exc.read() or b"{}").get("error") or exc.reason
        except ValueError:
            reason = exc.reason
        sys.exit("the sandbox refused the request: %s" % reason)


def _running_state(state_dir):
    st = _state(state_dir)
    if st and _alive(st["pid"]):
        return st
    return None


def _check_up_args(args):
    for option, value, low, high in (("--nodes", args.nodes, 1, None), ("--azs", args.azs, 1, MAX_AZS),
                                     ("--groups", args.groups, 1, None)):
        if value < low or (high is not None and value > high):
            sys.exit("%s must be %s, got %d" % (option, "between %d and %d" % (low, high) if high else "at least %d" % low,
                                                value))
    if not args.speed > 0:
        sys.exit("--speed must be a number of simulated seconds per wall second > 0, got %s" % args.speed)
    if args.rbac_file:
        args.rbac = True
        if not os.path.isfile(args.rbac_file):
            sys.exit("--rbac-file: no such file: %s" % args.rbac_file)
    if args.rbac and args.kube != "reference":
        sys.exit("--rbac needs --kube reference: the embedded API server has no authorizer")
    from .startup_taints import parse_cli_taint  # pylint: disable=import-outside-toplevel
    args.startup_taints = []
    for text in args.startup_taint or []:
        try:
            taint = parse_cli_taint(text)
        except ValueError as exc:
            sys.exit("%s (KEY[=VALUE]:EFFECT[@SECONDS|@never], such as node.cilium.io/agent-not-ready:NoSchedule@30)" % exc)
        if any((t["key"], t["effect"]) == (taint["key"], taint["effect"]) for t in args.startup_taints):
            sys.exit("--startup-taint: %s:%s is given twice" % (taint["key"], taint["effect"]))
        args.startup_taints.append(taint)


def cmd_up(args):
    _check_up_args(args)
    state_dir = os.path.abspath(args.state_dir)
    os.makedirs(state_dir, exist_ok=True)
    st = _running_state(state_dir)
    if st:
        sys.exit("a sandbox is already running in %s (pid %d); run 'down' first" % (state_dir, st["pid"]))
    state_path = os.path.join(state_dir, STATE_FILE)
    if os.path.exists(state_path):
        os.remove(state_path)
    from .reference.build import ensure  # pylint: disable=import-outside-toplevel
    if args.kube == "reference":   # build (or find) the control plane first: a first build takes minutes
        ensure()
    if args.alertmanager:   # and Alertmanager (a first build takes about a minute)
        ensure(which="alertmanager")
    if args.pushgateway:   # and the Pushgateway (Debian's package, fetched once)
        from .pushgateway import ensure as ensure_pushgateway  # pylint: disable=import-outside-toplevel
        ensure_pushgateway()
    if args.detach:
        return _up_detached(args, state_dir)
    from .cluster import Sandbox  # pylint: disable=import-outside-toplevel
    sandbox = Sandbox(state_dir, nodes=args.nodes, azs=args.azs, groups=args.groups, speed=args.speed, kube=args.kube,
                      rbac=args.rbac, rbac_file=args.rbac_file, iam=args.iam, startup_taints=args.startup_taints,
                      alertmanager=args.alertmanager, pushgateway=args.pushgateway)

    def _stop(*_):
        sandbox.stop()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        sandbox.start(workloads=[os.path.abspath(w) for w in args.workload or []])
    except Exception:
        sandbox.stop()
        raise
    print("sandbox up: %d node(s) in %d group(s) over %d AZ(s); state in %s" % (
        args.nodes * args.groups, args.groups, args.azs, state_dir), flush=True)
    sandbox.stopped.wait()
    path = os.path.join(state_dir, STATE_FILE)
    if os.path.exists(path):
        os.remove(path)
    # Everything is stopped and every file closed: leave without the interpreter's teardown, which spends
    # seconds freeing moto's object graph while 'down' waits for this process to end.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _up_detached(args, state_dir):
    cmd = [sys.executable, "-m", "sandbox", "up", "--state-dir", state_dir, "--nodes", str(args.nodes),
           "--azs", str(args.azs), "--groups", str(args.groups), "--speed", str(args.speed), "--kube", args.kube]
    if args.rbac:
        cmd.append("--rbac")
    if args.rbac_file:
        cmd += ["--rbac-file", os.path.abspath(args.rbac_file)]
    if args.iam:
        cmd.append("--iam")
    if args.alertmanager:
        cmd.append("--alertmanager")
    if args.pushgateway:
        cmd.append("--pushgateway")
    for w in args.workload or []:
        cmd += ["--workload", os.path.abspath(w)]
    for t in args.startup_taint or []:
        cmd += ["--startup-taint", t]
    log_path = os.path.join(state_dir, "sandbox.log")
    # from the repository root, where python -m finds the sandbox package, whatever directory up was run from
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,  # pylint: disable=consider-using-with
                                cwd=root, start_new_session=True)
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        st = _state(state_dir)
        if st and st.get("pid") == proc.pid:
            print("sandbox up (pid %d): %d node(s) in %d group(s) over %d AZ(s); kubeconfig %s; "
                  "source %s for AWS" % (proc.pid, args.nodes * args.groups, args.groups, args.azs,
                                         st["kubeconfig"], os.path.join(state_dir, "aws.env")))
            return 0
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    with open(log_path, encoding="utf-8") as fh:
        tail = fh.read()[-4000:]
    sys.exit("sandbox failed to start (see %s):\n%s" % (log_path, tail))


def cmd_down(args):
    state_dir = os.path.abspath(args.state_dir)
    st = _state(state_dir)
    if not st:
        print("no sandbox running in %s" % state_dir)
        return 0
    pid = st["pid"]
    if _alive(pid):
        try:
            _post(st["control_url"] + "/stop", {}, timeout=5)
        except (urllib.error.URLError, OSError, ValueError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    path = os.path.join(state_dir, STATE_FILE)
    if os.path.exists(path):
        os.remove(path)
    print("sandbox down (pid %d)" % pid)
    return 0


def cmd_report(args):
    path = os.path.join(os.path.abspath(args.state_dir), "events.jsonl")
    if not os.path.exists(path):
        sys.exit("no event log at %s: was a sandbox started with this --state-dir?" % path)
    print(dumps(build_report(read_events(path), client_prefix=args.client_prefix)))
    return 0


def _rates(pairs, option):
    out = {}
    for pair in pairs or []:
        name, sep, rate = pair.partition("=")
        try:
            value = float(rate)
        except ValueError:
            value = -1.0
        if not sep or not name or not 0.0 <= value <= 1.0:
            sys.exit("%s: %r is not NAME=RATE with RATE between 0 and 1 (e.g. SetDesiredCapacity=0.5, '*'=1)"
                     % (option, pair))
        out[name] = value
    return out


def _verb_rates(pairs, option):
    out = _rates(pairs, option)
    for verb in out:
        if verb != "*" and verb not in K8S_VERBS:
            sys.exit("%s: unknown verb %r; allowed: %s, '*'" % (option, verb, ", ".join(K8S_VERBS)))
    return out


def cmd_fault(args):
    st = _running_state(os.path.abspath(args.state_dir))
    if not st:
        sys.exit("no sandbox running in %s" % os.path.abspath(args.state_dir))
    spec = {"clear": args.clear, "seed": args.seed,
            "aws_throttle": _rates(args.aws_throttle, "--aws-throttle"),
            "aws_5xx": _rates(args.aws_5xx, "--aws-5xx"),
            "k8s_429": _verb_rates(args.k8s_429, "--k8s-429"),
            "k8s_5xx": _verb_rates(args.k8s_5xx, "--k8s-5xx"),
            "eviction_latency": args.eviction_latency}
    if args.eviction_latency is not None and not args.eviction_latency >= 0:
        sys.exit("--eviction-latency must be a number of simulated seconds >= 0, got %s" % args.eviction_latency)
    if args.insufficient_capacity is not None:
        zones = sorted(st.get("subnets") or {})
        for az in args.insufficient_capacity:
            if az not in zones:
                sys.exit("--insufficient-capacity: %r is not an Availability Zone of this sandbox (%s); pass '' to clear"
                         % (az, ", ".join(zones)))
        spec["insufficient_capacity_azs"] = args.insufficient_capacity
    if args.nodes_never_ready is not None:
        spec["nodes_never_ready"] = args.nodes_never_ready
    if args.unreachable_node:
        spec["unreachable_nodes"] = args.unreachable_node
    if args.k8s_forbid:
        spec["k8s_forbid"] = {}
        for item in args.k8s_forbid:
            resource, _sep, verbs = item.partition("=")
            if not resource or not verbs:
                sys.exit("--k8s-forbid: %r is not allowed; use RESOURCE=VERB[,VERB] (VERB '*' for all, '' to grant again)" % item)
            spec["k8s_forbid"][resource] = [verb for verb in verbs.split(",") if verb]
    if args.k8s_down is not None:
        if not args.k8s_down >= 0:
            sys.exit("--k8s-down must be a number of wall seconds >= 0, got %s" % args.k8s_down)
        spec["k8s_down"] = args.k8s_down
    _post(st["control_url"] + "/fault", spec)
    print("faults set: %s" % json.dumps({k: v for k, v in spec.items() if v not in (None, {}, False)}, sort_keys=True))
    return 0


def cmd_startup_taints(args):
    st = _running_state(os.path.abspath(args.state_dir))
    if not st:
        sys.exit("no sandbox running in %s" % os.path.abspath(args.state_dir))
    from .startup_taints import parse_cli_taint  # pylint: disable=import-outside-toplevel
    body = {}
    if args.group is not None:
        body["group"] = args.group
        body["taints"] = []
        for text in args.taint or []:
            try:
                body["taints"].append(parse_cli_taint(text, "--taint"))
            except ValueError as exc:
                sys.exit("%s (KEY[=VALUE]:EFFECT[@SECONDS|@never])" % exc)
        if args.version is not None:
            body["version"] = args.version
    elif args.taint or args.version is not None:
        sys.exit("--taint and --version need --group (a group's name, or '*' for every group)")
    if args.user_data_lift:
        lifts = {}
        for item in args.user_data_lift:
            key, sep, value = item.partition("=")
            if not sep:
                sys.exit("--user-data-lift: %r is not KEY=SECONDS or KEY=never" % item)
            try:
                lifts[key] = None if value == "never" else float(value)
            except ValueError:
                sys.exit("--user-data-lift: %r is not KEY=SECONDS or KEY=never" % item)
        body["user_data_lift_after"] = lifts
    answer = _post(st["control_url"] + "/startup-taints", body) if body else _get(st["control_url"] + "/startup-taints")
    answer.pop("ok", None)
    print(json.dumps(answer, indent=2, sort_keys=True))
    return 0


def _get(url, timeout=30):
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # nosec - loopback control endpoint
        return json.loads(resp.read() or b"{}")


def cmd_apply(args):
    st = _running_state(os.path.abspath(args.state_dir))
    if not st:
        sys.exit("no sandbox running in %s" % os.path.abspath(args.state_dir))
    for path in args.files:
        if not os.path.isfile(path):
            sys.exit("apply: no such file: %s" % path)
    from kubernetes import config, utils  # pylint: disable=import-outside-toplevel
    api_client = config.new_client_from_config(config_file=st["kubeconfig"])
    api_client.user_agent = "sandbox-apply"
    for path in args.files:
        try:
            utils.create_from_yaml(api_client, path)
        except utils.FailToCreateError as exc:   # what kubectl create says: the others were created
            reasons = []
            for failure in exc.api_exceptions:
                try:
                    reasons.append(json.loads(failure.body).get("message") or failure.reason)
                except (TypeError, ValueError):
                    reasons.append("%s %s" % (failure.status, failure.reason))
            sys.exit("apply: %s: %s" % (path, "; ".join(reasons)))
        print("applied %s" % path)
    return 0


def cmd_show(args):
    """Nodes with their instance's launch template version, pods per node, and each group's sizes, as the APIs say."""
    st = _running_state(os.path.abspath(args.state_dir))
    if not st:
        sys.exit("no sandbox running in %s" % os.path.abspath(args.state_dir))
    import boto3  # pylint: disable=import-outside-toplevel
    from kubernetes import client, config  # pylint: disable=import-outside-toplevel
    api_client = config.new_client_from_config(config_file=st["kubeconfig"])
    api_client.user_agent = "sandbox-show"
    core = client.CoreV1Api(api_client)
    asg = boto3.client("autoscaling", region_name=st["region"], endpoint_url=st["aws_url"],
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    versions, images = {}, {}
    for group in asg.describe_auto_scaling_groups()["AutoScalingGroups"]:
        print("group %s: min %d, max %d, desired %d, suspended %s" % (
            group["AutoScalingGroupName"], group["MinSize"], group["MaxSize"], group["DesiredCapacity"],
            [p["ProcessName"] for p in group.get("SuspendedProcesses") or []] or "none"))
        for inst in group.get("Instances") or []:
            versions[inst["InstanceId"]] = (inst.get("LaunchTemplate") or {}).get("Version")
    amis = {v: k for k, v in (st.get("amis") or {}).items()}
    ec2 = boto3.client("ec2", region_name=st["region"], endpoint_url=st["aws_url"],
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    for page in ec2.get_paginator("describe_instances").paginate():
        for res in page["Reservations"]:
            for inst in res["Instances"]:
                images[inst["InstanceId"]] = amis.get(inst.get("ImageId"), inst.get("ImageId"))
    pods_by_node = {}
    for pod in core.list_pod_for_all_namespaces().items:
        ready = any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])
        pods_by_node.setdefault(pod.spec.node_name, []).append("%s/%s%s" % (
            pod.metadata.namespace, pod.metadata.name, "" if ready else " (not ready)"))
    for node in core.list_node().items:
        instance_id = (node.spec.provider_id or "").rsplit("/", 1)[-1]
        ready = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
        flags = ["Ready" if ready else "NotReady"]
        if node.spec.unschedulable:
            flags.append("SchedulingDisabled")
        flags += ["%s:%s" % (t.key, t.effect) for t in node.spec.taints or []]
        print("%s  %s  %s  version %s (%s AMI)  %s" % (
            node.metadata.name, node.metadata.labels.get("topology.kubernetes.io/zone"), instance_id,
            versions.get(instance_id, "-"), images.get(instance_id, "?"), ",".join(flags)))
        for pod in sorted(pods_by_node.get(node.metadata.name, [])):
            print("    %s" % pod)
    pending = pods_by_node.get(None)
    if pending:
        print("not scheduled: %s" % ", ".join(sorted(pending)))
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sandbox", description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)

    up = sub.add_parser("up", help="start a sandbox")
    up.add_argument("--state-dir", required=True)
    up.add_argument("--nodes", type=int, default=6, help="instances per Auto Scaling group (default 6)")
    up.add_argument("--azs", type=int, default=3, help="availability zones, one subnet each (default 3)")
    up.add_argument("--groups", type=int, default=1, help="Auto Scaling groups: sandbox-nodes, sandbox-nodes-2, ...")
    up.add_argument("--speed", type=float, default=10.0, help="simulated seconds per wall second (default 10)")
    up.add_argument("--kube", choices=("embedded", "reference"), default="embedded",
                    help="Kubernetes backend: embedded (this project's API server and controllers, starts in seconds) or "
                         "reference (the real kube-apiserver, controllers and scheduler with kwok, built from Go modules "
                         "on first use)")
    up.add_argument("--iam", action="store_true",
                    help="enforce AWS IAM on the collection by moto's authorizer: an IAM user nodeops-rollout with the policy "
                         "of docs/iam-policy.json (as moto evaluates it: actions only) signs the collection's requests "
                         "(the keys of aws.env); the sandbox's own clients stay unauthenticated")
    up.add_argument("--rbac", action="store_true",
                    help="enforce RBAC on the collection (reference backend): kube-apiserver authorizes with Node,RBAC, the "
                         "objects of docs/rbac.yaml are applied, and the collection's kubeconfig (rollout.kubeconfig, the "
                         "KUBECONFIG of aws.env) holds a token of their ServiceAccount nodeops-rollout/nodeops-rollout; the "
                         "sandbox's own clients and 'kubeconfig' keep every right (group system:masters)")
    up.add_argument("--rbac-file", metavar="FILE",
                    help="with --rbac (implied), apply this file's RBAC objects instead of docs/rbac.yaml; it must "
                         "define the ServiceAccount nodeops-rollout/nodeops-rollout")
    up.add_argument("--alertmanager", action="store_true",
                    help="also start the real Alertmanager (built from its Go module on first use) on 127.0.0.1, for the alert gates")
    up.add_argument("--pushgateway", action="store_true",
                    help="also start the real Pushgateway (Debian's build, fetched on first use) on 127.0.0.1, for the run's metrics")
    up.add_argument("--workload", action="append", help="YAML created through the Kubernetes API once nodes are Ready")
    up.add_argument("--startup-taint", action="append", metavar="KEY[=VALUE]:EFFECT[@SECONDS|@never]",
                    help="a taint every node that joins after the start registers with, lifted by its agent SECONDS "
                         "simulated seconds after the node turned Ready (default 10), or never; repeatable "
                         "(sandbox/startup_taints.py)")
    up.add_argument("--detach", action="store_true", help="run in the background; 'down' stops it")
    up.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for a detached start")
    up.set_defaults(func=cmd_up)

    down = sub.add_parser("down", help="stop a sandbox and everything it started")
    down.add_argument("--state-dir", required=True)
    down.set_defaults(func=cmd_down)

    rep = sub.add_parser("report", help="print the invariant report as JSON")
    rep.add_argument("--state-dir", required=True)
    rep.add_argument("--client-prefix", default="nodeops.rollout",
                     help="the rollout window opens at this client's first mutating request")
    rep.set_defaults(func=cmd_report)

    fault = sub.add_parser("fault", help="set fault injection on a running sandbox")
    fault.add_argument("--state-dir", required=True)
    fault.add_argument("--aws-throttle", action="append", metavar="ACTION=RATE")
    fault.add_argument("--aws-5xx", action="append", metavar="ACTION=RATE")
    fault.add_argument("--k8s-429", action="append", metavar="VERB=RATE")
    fault.add_argument("--k8s-5xx", action="append", metavar="VERB=RATE")
    fault.add_argument("--insufficient-capacity", action="append", metavar="AZ",
                       help="launches into this AZ fail (repeatable); pass '' to clear")
    ready = fault.add_mutually_exclusive_group()
    ready.add_argument("--nodes-never-ready", dest="nodes_never_ready", action="store_true", default=None)
    ready.add_argument("--nodes-ready", dest="nodes_never_ready", action="store_false")
    fault.add_argument("--eviction-latency", type=float, metavar="SECONDS")
    fault.add_argument("--unreachable-node", action="append", metavar="NODE",
                       help="this node's kubelet stops posting status (repeatable): Ready Unknown after the node monitor "
                            "grace period, its pods not Ready, nothing on it confirmed gone (embedded backend)")
    fault.add_argument("--k8s-down", type=float, metavar="SECONDS",
                       help="the Kubernetes API server is unreachable for this many wall seconds: connections cut, none served")
    fault.add_argument("--k8s-forbid", action="append", metavar="RESOURCE=VERB[,VERB]",
                       help="answer 403 Forbidden to these verbs of a resource (repeatable), as an RBAC role without them "
                            "would; e.g. events=create (embedded backend)")
    fault.add_argument("--seed", type=int)
    fault.add_argument("--clear", action="store_true", help="clear every fault first")
    fault.set_defaults(func=cmd_fault)

    startup = sub.add_parser("startup-taints", help="set the taints nodes that join from now on register with, or "
                             "print the rules and the lifts still pending (no option)")
    startup.add_argument("--state-dir", required=True)
    startup.add_argument("--group", help="an Auto Scaling group's name, or '*' for every group; with no --taint, its "
                                         "rule is removed")
    startup.add_argument("--version", type=int, help="only the nodes of this launch template version of the group")
    startup.add_argument("--taint", action="append", metavar="KEY[=VALUE]:EFFECT[@SECONDS|@never]",
                         help="a taint of the rule (repeatable), lifted SECONDS simulated seconds after the node turned "
                              "Ready (default 10), or never")
    startup.add_argument("--user-data-lift", action="append", metavar="KEY=SECONDS|never",
                         help="when the taints of this key from user data's --register-with-taints are lifted (repeatable)")
    startup.set_defaults(func=cmd_startup_taints)

    apply_ = sub.add_parser("apply", help="create the objects of YAML files through the Kubernetes API")
    apply_.add_argument("--state-dir", required=True)
    apply_.add_argument("files", nargs="+")
    apply_.set_defaults(func=cmd_apply)

    show = sub.add_parser("show", help="print nodes (with their launch template version), pods per node and group sizes")
    show.add_argument("--state-dir", required=True)
    show.set_defaults(func=cmd_show)

    args = parser.parse_args(argv)
    if args.command == "fault" and args.insufficient_capacity is not None:
        args.insufficient_capacity = [az for az in args.insufficient_capacity if az]
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
