"""The invariant checker: reads the sandbox's event log and reports what a user would call safety.

Everything is derived from the log written by the store, the API server, the controllers and the AWS
side, so it can be computed while the sandbox runs or after it is down.

The *rollout window* starts at the first mutating API request (AWS or Kubernetes) made by a client whose
name starts with ``client_prefix`` (the collection's modules identify themselves as
``nodeops.rollout/<version> <module>``); when no such request exists it starts when the sandbox reported
itself up (the ``sandbox.ready`` event: nodes Ready, start-up workloads Ready), or at the log's first event
in a log without one.
Pods that existed when the window opened (DaemonSet pods aside: they never move) are *pre-existing*.

A node is *Ready schedulable* (``min_ready_schedulable_nodes``, ``ready_schedulable_nodes_at_start``): a node counts
when it is Ready, not cordoned, and has no NoSchedule/NoExecute taint (``spec.unschedulable`` is the cordon; a taint
of any key counts: the scheduler places no new pod on the node then, whether the taint is the rollout's
``nodeops.rollout/outdated``, the node controller's ``node.kubernetes.io/not-ready``, a startup taint a node joined
with until its agent lifts it, such as Cilium's ``node.cilium.io/agent-not-ready``, or an operator's). A
``PreferNoSchedule`` taint leaves the node schedulable (the scheduler only avoids it). Taints are read from the
``node.taints`` events (each taint a ``key=value:Effect`` string; the event carries the node's whole list), written
when a node registers with taints and whenever they change. A deleted node counts for nothing.
``ready_schedulable_nodes_at_start`` is, per group, N, the nodes that could take pods when the window started;
``min_ready_schedulable_nodes`` the fewest within the window.
"""

import collections
import json

DAEMONSET = "DaemonSet/"
# Clients that are the cluster's own controllers (the embedded backend's, or kube-controller-manager's on the
# reference backend): a pod they delete (a ReplicaSet scaling down, a DaemonSet update) is the workload's own doing.
CONTROLLERS = ("sandbox", "kube-controller-manager/")
# Taint effects that keep the scheduler from placing new pods on a node (PreferNoSchedule only discourages it).
UNSCHEDULABLE_EFFECTS = ("NoSchedule", "NoExecute")


def _window_start(events, client_prefix):
    for e in events:
        if e["kind"] in ("k8s.request", "aws.request") and e.get("mutating") and \
                str(e.get("client") or "").startswith(client_prefix):
            return e["t"]
    return None


def _workload_downtime(events, start, kind):
    """Per workload of ``kind`` (Deployment, StatefulSet), by namespace/name: seconds (simulated) with zero Ready pods
    after it first had one, within the window."""
    prefix = kind + "/"
    ready = collections.defaultdict(set)
    seen_ready = set()
    zero_since = {}
    downtime = collections.defaultdict(float)
    min_ready = {}
    for e in events:
        owner = e.get("owner")
        if not owner or not owner.startswith(prefix) or not e["kind"].startswith("pod."):
            continue
        dep = owner[len(prefix):]
        before = len(ready[dep])
        if e["kind"] == "pod.ready":
            ready[dep].add(e["uid"])
            seen_ready.add(dep)
        elif e["kind"] in ("pod.unready", "pod.terminating", "pod.deleted"):
            ready[dep].discard(e["uid"])
        after = len(ready[dep])
        if dep not in seen_ready:
            continue
        t = max(e["t"], start)
        if e["t"] >= start:
            min_ready[dep] = min(min_ready.get(dep, after), after)
        if before > 0 and after == 0:
            zero_since[dep] = t
        elif before == 0 and after > 0 and dep in zero_since:
            downtime[dep] += max(0.0, t - zero_since.pop(dep))
    end = events[-1]["t"] if events else 0.0
    for dep, since in zero_since.items():
        downtime[dep] += max(0.0, max(end, start) - since)
    out = {}
    for dep in sorted(seen_ready | set(ready)):
        out[dep] = {"zero_ready_seconds": round(downtime.get(dep, 0.0), 3),
                    "min_ready_pods": min_ready.get(dep, len(ready[dep])),
                    "ready_pods_at_end": len(ready[dep])}
    return out


def _blocks_scheduling(taint):
    """``key=value:Effect`` (as ``node.taints`` events write it): True for NoSchedule and NoExecute."""
    return str(taint).rsplit(":", 1)[-1] in UNSCHEDULABLE_EFFECTS


def _node_floor(events, start):
    """Per group: the lowest count of Ready schedulable nodes (module docstring) within the window."""
    state = {}  # node -> dict(group, ready, cordoned, tainted)
    floor = {}
    counts_at_start = {}

    def count(group):
        return sum(1 for s in state.values()
                   if s["group"] == group and s["ready"] and not s["cordoned"] and not s["tainted"])

    started = False
    for e in events:
        if not started and e["t"] >= start:
            started = True
            for g in {s["group"] for s in state.values()}:
                counts_at_start[g] = count(g)
                floor[g] = counts_at_start[g]
        kind = e["kind"]
        if not kind.startswith("node."):
            continue
        node = e["node"]
        s = state.setdefault(node, {"group": e.get("group"), "ready": False, "cordoned": False, "tainted": False})
        if kind == "node.ready":
            s["ready"] = True
        elif kind == "node.notready":
            s["ready"] = False
        elif kind == "node.cordoned":
            s["cordoned"] = True
        elif kind == "node.uncordoned":
            s["cordoned"] = False
        elif kind == "node.taints":
            s["tainted"] = any(_blocks_scheduling(t) for t in e.get("taints") or [])
        elif kind == "node.deleted":
            state.pop(node, None)
        if started:
            g = s["group"]
            floor[g] = min(floor.get(g, count(g)), count(g))
    if not started:
        for g in {s["group"] for s in state.values()}:
            floor[g] = count(g)
    return {str(g): v for g, v in floor.items()}, {str(g): v for g, v in counts_at_start.items()}


def _instance_id(provider_id):
    tail = str(provider_id or "").rsplit("/", 1)[-1]
    return tail if tail.startswith("i-") else None


def _load_balancers(events, start):
    """Seconds each node was a ``healthy`` target of a load balancer with no Ready pod on it, within the window, and the
    targets cut by a termination.

    A node counts from the moment its last Ready pod (DaemonSet pods aside) went, once it has had one, while its
    instance is ``healthy`` in at least one target group (``lb.target`` events): the load balancer still sends it
    connections that no pod on it answers, as a Service with ``externalTrafficPolicy: Local`` sees it (the 502s of a
    node drained before it left its target groups). A new node that never had a pod is not counted. A *cut* is an
    instance terminated while it was still a target, ``healthy`` or ``draining``: its connections were dropped.
    """
    node_of, instance_at = {}, {}              # instance id -> node name, and back
    ready = collections.defaultdict(set)       # node -> uids of its Ready pods
    ready_on = {}                              # uid of a Ready pod -> its node
    had_pods = set()
    healthy = collections.defaultdict(set)     # instance id -> target groups where it is healthy
    since = {}                                 # node -> when it started serving nothing
    seconds = collections.defaultdict(float)
    cuts = []

    def serving_nothing(node, instance_id):
        return node in had_pods and not ready[node] and bool(healthy.get(instance_id))

    def update(node, t):
        instance_id = instance_at.get(node)
        now_nothing = node is not None and instance_id is not None and serving_nothing(node, instance_id)
        if now_nothing and node not in since:
            since[node] = t
        elif not now_nothing and node in since:
            began = since.pop(node)
            seconds[node] += max(0.0, t - max(began, start)) if t > start else 0.0

    for e in events:
        kind, t = e["kind"], e["t"]
        if kind == "node.added" and _instance_id(e.get("provider_id")):
            node_of[_instance_id(e.get("provider_id"))] = e["node"]
            instance_at[e["node"]] = _instance_id(e.get("provider_id"))
        elif kind == "node.deleted":
            update(e["node"], t)
            since.pop(e["node"], None)
            node_of.pop(instance_at.pop(e["node"], None), None)
        elif kind.startswith("pod.") and not str(e.get("owner") or "").startswith(DAEMONSET):
            node = e.get("node")
            if kind == "pod.ready" and node:
                ready[node].add(e["uid"])
                ready_on[e["uid"]] = node
                had_pods.add(node)
            elif kind in ("pod.unready", "pod.terminating", "pod.deleted") and e["uid"] in ready_on:
                node = ready_on.pop(e["uid"])
                ready[node].discard(e["uid"])
            update(node, t)
        elif kind == "lb.target":
            instance_id = e["instance_id"]
            if e.get("state") == "healthy":
                healthy[instance_id].add(e["target_group"])
            else:
                healthy[instance_id].discard(e["target_group"])
            if e.get("by") == "terminated" and t >= start:
                cuts.append({"t": t, "instance_id": instance_id, "node": node_of.get(instance_id),
                             "target_group": e["target_group"], "was": e.get("was")})
            update(node_of.get(instance_id), t)
    end = events[-1]["t"] if events else 0.0
    for node, began in since.items():
        seconds[node] += max(0.0, end - max(began, start))
    per_node = {node: round(value, 3) for node, value in sorted(seconds.items()) if value > 0}
    return {"serving_without_ready_pods_seconds": round(sum(per_node.values()), 3), "per_node": per_node,
            "targets_cut": len(cuts), "targets_cut_details": cuts}


def _volumes(events, start):
    """Pods kept from running by a persistent volume within the window: Pending because no schedulable node matches
    their volume's node affinity ("volume node affinity conflict", or a claim not bound), or bound to a node where their
    ReadWriteOnce volume cannot be attached while another node holds it ("Multi-Attach", until the attachment may start).
    Each pod's seconds stuck,
    from the ``pod.volume_*`` events of the embedded backend's scheduler and attach/detach controller."""
    since, seconds, reasons, names = {}, collections.defaultdict(float), {}, {}

    def end(uid, t):
        began = since.pop(uid, None)
        if began is not None and t > start:
            seconds[uid] += t - max(began, start)

    for e in events:
        kind, uid = e["kind"], e.get("uid")
        if kind == "pod.volume_unschedulable" or (kind == "pod.volume_waiting" and e.get("reason") == "Multi-Attach"):
            since.setdefault(uid, e["t"])
            reasons[uid] = "volume node affinity conflict" if kind == "pod.volume_unschedulable" else "Multi-Attach"
            names[uid] = e.get("pod")
        elif kind in ("pod.volume_scheduled", "pod.volume_attached", "pod.deleted") or \
                (kind == "pod.volume_waiting" and e.get("reason") == "attaching"):
            end(uid, e["t"])
    last = events[-1]["t"] if events else 0.0
    for uid in list(since):
        end(uid, last)
    details = [{"pod": names[uid], "reason": reasons[uid], "seconds": round(value, 3)}
               for uid, value in sorted(seconds.items(), key=lambda item: names[item[0]] or "") if value > 0]
    return {"stuck_pods": len(details), "stuck_seconds": round(sum(d["seconds"] for d in details), 3), "stuck_details": details}


def build_report(events, client_prefix="nodeops.rollout"):
    events = sorted(events, key=lambda e: e["t"])
    start = _window_start(events, client_prefix)
    window_opened = start is not None
    if start is None:   # no rollout: what happened since the sandbox was up, not its own start-up
        start = next((e["t"] for e in events if e["kind"] == "sandbox.ready"), events[0]["t"] if events else 0.0)

    alive_at_start, born = set(), {}
    pdb_violations, killed, deleted_direct = [], [], []
    evictions = collections.Counter()
    evicted_pre, evicted_new = 0, 0
    scheduled, gone, unschedulable = {}, {}, {}
    for e in events:
        kind = e["kind"]
        if kind == "pod.scheduled" or (kind == "pod.created" and e.get("node")):
            scheduled.setdefault(e["uid"], e["t"])
        if kind == "pod.unschedulable":
            unschedulable.setdefault(e["uid"], e["t"])
        if kind == "pod.deleted":
            gone.setdefault(e["uid"], e["t"])
        if kind == "pod.created":
            born[e["uid"]] = e["t"]
            if e["t"] < start and not str(e.get("owner") or "").startswith(DAEMONSET):
                alive_at_start.add(e["uid"])  # DaemonSet pods never move: they are not counted
        elif kind == "pod.deleted" and e["t"] < start:
            alive_at_start.discard(e["uid"])
        elif kind == "pod.terminating":
            owner = e.get("owner") or ""
            how = e.get("how")
            if e.get("was_ready"):
                for p in e.get("pdbs") or []:
                    if p["healthy"] < p["desired"]:
                        pdb_violations.append({"t": e["t"], "pod": e["pod"], "pdb": p["pdb"], "how": how,
                                               "healthy_after": p["healthy"], "desired": p["desired"]})
            running = e.get("phase") in ("Running", None) or e.get("was_ready")
            if how == "killed" and running and not owner.startswith(DAEMONSET):
                killed.append({"t": e["t"], "pod": e["pod"], "node": e.get("node"), "owner": owner or None,
                               "reason": e.get("reason")})
            if how == "deleted" and running and not owner.startswith(DAEMONSET) and e.get("reason") != "garbage-collected" \
                    and not str(e.get("client") or "").startswith(CONTROLLERS):
                deleted_direct.append({"t": e["t"], "pod": e["pod"], "node": e.get("node"), "client": e.get("client")})
            if how == "evicted":
                evictions[e["uid"]] += 1
                if e["uid"] in alive_at_start:
                    evicted_pre += 1
                elif born.get(e["uid"], 0.0) >= start:
                    evicted_new += 1

    requests = {"kubernetes": collections.defaultdict(lambda: {"total": 0, "mutating": 0}),
                "aws": collections.defaultdict(lambda: {"total": 0, "mutating": 0})}
    asg_history = collections.defaultdict(list)
    nodes_replaced = 0
    for e in events:
        kind = e["kind"]
        if kind in ("k8s.request", "aws.request") and e["t"] >= start:
            bucket = requests["kubernetes" if kind == "k8s.request" else "aws"][str(e.get("client"))]
            bucket["total"] += 1
            bucket["mutating"] += 1 if e.get("mutating") else 0
        elif kind == "asg.size":
            asg_history[e["group"]].append({"t": e["t"], "min": e.get("min"), "max": e.get("max"),
                                            "desired": e.get("desired")})
        elif kind == "node.deleted" and e["t"] >= start:
            nodes_replaced += 1

    # how long the pods created during the rollout (the evicted pods' replacements) waited for a node
    end = events[-1]["t"] if events else 0.0
    pending = [min(scheduled.get(uid, end), gone.get(uid, end)) - t for uid, t in born.items() if t >= start]
    # of that, how long they waited after the scheduler found no node with room for them (the wait for capacity,
    # not for the scheduler's turn)
    no_room = [max(0.0, min(scheduled.get(uid, end), gone.get(uid, end)) - t) for uid, t in unschedulable.items()
               if born.get(uid, start) >= start]
    floor, at_start = _node_floor(events, start)
    rollout_clients = {k: v for k, v in requests["kubernetes"].items() if k.startswith(client_prefix)}
    rollout_aws = {k: v for k, v in requests["aws"].items() if k.startswith(client_prefix)}
    k8s_total = sum(v["total"] for v in rollout_clients.values())
    aws_total = sum(v["total"] for v in rollout_aws.values())
    return {
        "window": {"opened_by_client": window_opened, "start": start, "end": events[-1]["t"] if events else 0.0},
        "deployments": _workload_downtime(events, start, "Deployment"),
        "statefulsets": _workload_downtime(events, start, "StatefulSet"),
        "pdb_violations": len(pdb_violations),
        "pdb_violation_details": pdb_violations,
        "killed_without_eviction": len(killed),
        "killed_without_eviction_details": killed,
        "deleted_without_eviction": len(deleted_direct),
        "deleted_without_eviction_details": deleted_direct,
        "min_ready_schedulable_nodes": floor,
        "ready_schedulable_nodes_at_start": at_start,
        "evictions": {"total": sum(evictions.values()), "pre_existing_pods": len(alive_at_start),
                      "evicted_pre_existing": evicted_pre, "evicted_born_during_rollout": evicted_new,
                      "max_evictions_per_pod": max(evictions.values()) if evictions else 0,
                      "per_pre_existing_pod": round(evicted_pre / len(alive_at_start), 3) if alive_at_start else 0.0},
        "max_pending_seconds": round(max(pending or [0.0]), 3),
        "max_unschedulable_seconds": round(max(no_room or [0.0]), 3),
        "pods_unschedulable": len(no_room),
        "api_requests": {"kubernetes": dict(requests["kubernetes"]), "aws": dict(requests["aws"])},
        "nodes_replaced": nodes_replaced,
        "rollout_requests_per_replaced_node": {
            "kubernetes": round(k8s_total / nodes_replaced, 2) if nodes_replaced else None,
            "aws": round(aws_total / nodes_replaced, 2) if nodes_replaced else None},
        "asg_size_history": dict(asg_history),
        "load_balancers": _load_balancers(events, start),
        "volumes": _volumes(events, start),
    }


def dumps(report):
    return json.dumps(report, indent=2, sort_keys=True)
