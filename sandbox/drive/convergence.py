"""What "nothing is lost" means after a rollout, interrupted or not, for the reliability tests and bench/kill_rerun.py:
``problems(sandbox, original_sizes, version)`` lists every way the group and the cluster differ from a finished,
clean rollout (empty when converged)."""

GROUP = "sandbox-nodes"
TAINT = "nodeops.rollout/outdated"
OUR_PREFIX = "nodeops.rollout/"
LB_EXCLUDE = "node.kubernetes.io/exclude-from-external-load-balancers"


def group_of(sandbox, name=GROUP):
    return sandbox.aws("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"][0]


def members(sandbox, name=GROUP):
    """The ids of the group's instances, sorted."""
    return sorted(instance["InstanceId"] for instance in group_of(sandbox, name)["Instances"])


def sizes(sandbox, name=GROUP):
    group = group_of(sandbox, name)
    return group["MinSize"], group["MaxSize"], group["DesiredCapacity"]


def problems(sandbox, original, version, name=GROUP, lock_namespace="kube-system"):
    """Every instance on launch template ``version`` (None: any, as a cancel leaves them) and in service, the ``original`` (min, max, desired) sizes, no
    state tag, suspended process, taint, cordon, label, annotation or lock of ours, every Deployment at full Ready
    replicas, and the invariant report clean (no PDB violation, no pod killed or deleted without eviction)."""
    found = []
    group = group_of(sandbox, name)
    if (group["MinSize"], group["MaxSize"], group["DesiredCapacity"]) != tuple(original):
        found.append("sizes %s, not %s" % ((group["MinSize"], group["MaxSize"], group["DesiredCapacity"]), tuple(original)))
    versions = sorted({(i.get("LaunchTemplate") or {}).get("Version") for i in group["Instances"]})
    if version is not None and versions != [str(version)]:
        found.append("instances on versions %s, not %s" % (versions, version))
    states = sorted({i["LifecycleState"] for i in group["Instances"]})
    if states != ["InService"]:
        found.append("instances in states %s" % states)
    tags = sorted(t["Key"] for t in group["Tags"] if t["Key"].startswith(OUR_PREFIX))
    if tags:
        found.append("state tags left: %s" % tags)
    if group["SuspendedProcesses"]:
        found.append("processes suspended: %s" % [p["ProcessName"] for p in group["SuspendedProcesses"]])
    for node in sandbox.core().list_node().items:
        what = node.metadata.name
        if node.spec.unschedulable:
            found.append("%s cordoned" % what)
        if [t for t in node.spec.taints or [] if t.key.startswith(OUR_PREFIX)]:
            found.append("%s tainted" % what)
        if [k for k in node.metadata.annotations or {} if k.startswith(OUR_PREFIX)]:
            found.append("%s annotated" % what)
        if [k for k in node.metadata.labels or {} if k.startswith(OUR_PREFIX) or k == LB_EXCLUDE]:
            found.append("%s labelled" % what)
    from kubernetes import client  # pylint: disable=import-outside-toplevel
    leases = client.CoordinationV1Api(sandbox.kube()).list_namespaced_lease(lock_namespace).items
    held = [lease.metadata.name for lease in leases if lease.metadata.name.startswith("nodeops-rollout-")
            and lease.spec.holder_identity]
    if held:
        found.append("locks held: %s" % held)
    for deployment in sandbox.apps().list_deployment_for_all_namespaces().items:
        if (deployment.status.ready_replicas or 0) != deployment.spec.replicas:
            found.append("deployment %s/%s %s/%s Ready" % (deployment.metadata.namespace, deployment.metadata.name,
                                                           deployment.status.ready_replicas or 0, deployment.spec.replicas))
    report = sandbox.report()
    for key in ("pdb_violations", "killed_without_eviction", "deleted_without_eviction"):
        if report[key]:
            found.append("%s: %s" % (key, report.get(key + "_details") or report[key]))
    return found


def record(name, sandbox, **facts):
    """Write the invariant report's headline figures of a reliability case, and ``facts``, to
    ``tests/output/reliability/<name>.json`` (what a reviewer reads after ``make test``)."""
    import json  # pylint: disable=import-outside-toplevel
    import os  # pylint: disable=import-outside-toplevel
    report = sandbox.report()
    figures = {key: report[key] for key in ("pdb_violations", "killed_without_eviction", "deleted_without_eviction",
                                            "min_ready_schedulable_nodes", "ready_schedulable_nodes_at_start")}
    figures["max_evictions_per_pod"] = report["evictions"]["max_evictions_per_pod"]
    figures["faults_injected"] = sum(1 for e in sandbox.events() if e.get("fault") or e.get("injected"))
    figures["kube"] = sandbox.state.get("kube", "embedded")
    out = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tests", "output", "reliability")
    os.makedirs(out, exist_ok=True)
    if figures["kube"] != "embedded":
        name += "-" + figures["kube"]
    with open(os.path.join(out, name + ".json"), "w", encoding="utf-8") as fh:
        json.dump(dict(figures, **facts), fh, indent=1, sort_keys=True)
