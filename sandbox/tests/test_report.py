"""The invariant checker on hand-written event logs: each invariant catches what it claims to."""

from sandbox.report import build_report

ROLLOUT = "nodeops.rollout/0.1.0 node_drain"


def ev(t, kind, **fields):
    fields.update(t=t, kind=kind)
    return fields


def pod_life(t, uid, owner, node="n1"):
    pod = "shop/%s" % uid
    return [ev(t, "pod.created", pod=pod, uid=uid, owner=owner, node=None),
            ev(t + 1, "pod.ready", pod=pod, uid=uid, owner=owner, node=node)]


def start_window(t):
    return ev(t, "k8s.request", verb="patch", client=ROLLOUT, mutating=True, code=200)


def test_window_opens_at_first_mutating_request_of_the_rollout_client():
    events = [ev(1, "k8s.request", verb="create", client="sandbox-setup", mutating=True),
              ev(2, "k8s.request", verb="list", client=ROLLOUT, mutating=False),
              start_window(5)]
    rep = build_report(events)
    assert rep["window"]["opened_by_client"] is True
    assert rep["window"]["start"] == 5


def test_pdb_violation_counted_only_when_a_ready_pod_leaves_below_the_budget():
    events = pod_life(0, "a", "Deployment/shop/web") + pod_life(0, "b", "Deployment/shop/web") + [start_window(10)]
    events.append(ev(11, "pod.terminating", pod="shop/a", uid="a", owner="Deployment/shop/web", node="n1",
                     how="evicted", was_ready=True, phase="Running", pdbs=[{"pdb": "shop/web", "healthy": 1, "desired": 1}]))
    events.append(ev(12, "pod.terminating", pod="shop/b", uid="b", owner="Deployment/shop/web", node="n1",
                     how="deleted", client="kubectl", was_ready=True, phase="Running",
                     pdbs=[{"pdb": "shop/web", "healthy": 0, "desired": 1}]))
    rep = build_report(events)
    assert rep["pdb_violations"] == 1
    assert rep["pdb_violation_details"][0]["pod"] == "shop/b"
    assert rep["deleted_without_eviction"] == 1
    assert rep["evictions"]["evicted_pre_existing"] == 1


def test_killed_without_eviction_excludes_daemonset_pods():
    events = pod_life(0, "w", "Deployment/shop/web") + pod_life(0, "d", "DaemonSet/kube-system/agent") + [start_window(5)]
    for uid, owner in (("w", "Deployment/shop/web"), ("d", "DaemonSet/kube-system/agent")):
        events.append(ev(6, "pod.terminating", pod="shop/" + uid, uid=uid, owner=owner, node="n1", how="killed",
                         reason="node-gone", was_ready=True, phase="Running", pdbs=[]))
    rep = build_report(events)
    assert rep["killed_without_eviction"] == 1
    assert rep["killed_without_eviction_details"][0]["pod"] == "shop/w"


def test_downtime_measured_only_after_the_deployment_first_served():
    events = pod_life(0, "only", "Deployment/shop/worker") + [start_window(5)]
    events.append(ev(10, "pod.terminating", pod="shop/only", uid="only", owner="Deployment/shop/worker", node="n1",
                     how="evicted", was_ready=True, phase="Running", pdbs=[]))
    events += [ev(12, "pod.created", pod="shop/new", uid="new", owner="Deployment/shop/worker", node=None),
               ev(14.5, "pod.ready", pod="shop/new", uid="new", owner="Deployment/shop/worker", node="n2")]
    rep = build_report(events)
    assert rep["deployments"]["shop/worker"]["zero_ready_seconds"] == 4.5
    assert rep["deployments"]["shop/worker"]["min_ready_pods"] == 0


def test_statefulset_downtime_is_reported_apart_from_deployments():
    owner = "StatefulSet/shop/db"
    events = pod_life(0, "db0", owner) + pod_life(0, "db1", owner) + [start_window(5)]
    for t, uid in ((10, "db0"), (11, "db1")):
        events.append(ev(t, "pod.terminating", pod="shop/" + uid, uid=uid, owner=owner, node="n1", how="evicted",
                         was_ready=True, phase="Running", pdbs=[]))
    events += [ev(12, "pod.created", pod="shop/db-0", uid="db0b", owner=owner, node=None),
               ev(17, "pod.ready", pod="shop/db-0", uid="db0b", owner=owner, node="n2")]
    rep = build_report(events)
    assert rep["statefulsets"]["shop/db"] == {"zero_ready_seconds": 6.0, "min_ready_pods": 0, "ready_pods_at_end": 1}
    assert "shop/db" not in rep["deployments"]


def test_node_floor_counts_ready_and_uncordoned_nodes_per_group():
    events = []
    for n in ("n1", "n2", "n3"):
        events += [ev(0, "node.added", node=n, group="g"), ev(1, "node.ready", node=n, group="g")]
    events += [start_window(2), ev(3, "node.cordoned", node="n1", group="g"), ev(4, "node.cordoned", node="n2", group="g"),
               ev(5, "node.uncordoned", node="n2", group="g"), ev(6, "node.deleted", node="n1", group="g")]
    rep = build_report(events)
    assert rep["ready_schedulable_nodes_at_start"] == {"g": 3}
    assert rep["min_ready_schedulable_nodes"] == {"g": 1}
    assert rep["nodes_replaced"] == 1


def nodes_ready(group, *names):
    events = []
    for n in names:
        events += [ev(0, "node.added", node=n, group=group),
                   ev(0.5, "node.taints", node=n, group=group, taints=["node.kubernetes.io/not-ready=:NoSchedule"]),
                   ev(1, "node.ready", node=n, group=group), ev(1.5, "node.taints", node=n, group=group, taints=[])]
    return events


def floor_of(events, group="g"):
    rep = build_report(events)
    return rep["ready_schedulable_nodes_at_start"].get(group), rep["min_ready_schedulable_nodes"].get(group)


def test_node_floor_a_cordoned_node_is_not_schedulable():
    events = nodes_ready("g", "n1", "n2", "n3") + [start_window(2), ev(3, "node.cordoned", node="n1", group="g")]
    assert floor_of(events) == (3, 2)


def test_node_floor_a_node_not_ready_yet_is_not_counted_even_once_ready_while_its_not_ready_taint_stays():
    events = nodes_ready("g", "n1", "n2") + [start_window(2),
                                             ev(3, "node.added", node="n3", group="g"),
                                             ev(3, "node.taints", node="n3", group="g",
                                                taints=["node.kubernetes.io/not-ready=:NoSchedule"]),
                                             ev(4, "node.ready", node="n3", group="g"),
                                             ev(5, "node.cordoned", node="n1", group="g"),
                                             ev(5, "node.cordoned", node="n2", group="g")]
    # n3 is Ready but still carries the node controller's not-ready NoSchedule taint: nothing is schedulable
    assert floor_of(events) == (2, 0)
    events.append(ev(6, "node.taints", node="n3", group="g", taints=[]))
    assert build_report(events)["min_ready_schedulable_nodes"] == {"g": 0}


def test_node_floor_a_noschedule_or_noexecute_taint_of_any_key_makes_a_node_unschedulable():
    for taint in ("nodeops.rollout/outdated=true:NoSchedule", "example.com/gpu=a100:NoSchedule",
                  "node.kubernetes.io/unreachable=:NoExecute", "dedicated=:NoExecute"):
        events = nodes_ready("g", "n1", "n2", "n3") + [
            start_window(2),
            ev(3, "node.taints", node="n1", group="g", taints=["team=blue:PreferNoSchedule", taint]),
            ev(4, "node.taints", node="n2", group="g", taints=[taint])]
        assert floor_of(events) == (3, 1), taint


def test_node_floor_a_node_untainted_again_counts_again():
    events = nodes_ready("g", "n1", "n2") + [
        start_window(2),
        ev(3, "node.taints", node="n1", group="g", taints=["nodeops.rollout/outdated=true:NoSchedule"]),
        ev(4, "node.taints", node="n1", group="g", taints=[]),
        ev(5, "node.taints", node="n2", group="g", taints=["nodeops.rollout/outdated=true:NoSchedule"])]
    assert floor_of(events) == (2, 1)


def test_node_floor_prefer_no_schedule_still_counts_as_schedulable():
    events = nodes_ready("g", "n1", "n2") + [
        start_window(2),
        ev(3, "node.taints", node="n1", group="g", taints=["nodeops.rollout/outdated=true:PreferNoSchedule"]),
        ev(3, "node.taints", node="n2", group="g",
           taints=["nodeops.rollout/outdated=true:PreferNoSchedule", "example.com/spot=:PreferNoSchedule"])]
    assert floor_of(events) == (2, 2)


def test_node_floor_tainted_at_the_window_start_is_not_counted_at_the_start():
    events = nodes_ready("g", "n1", "n2", "n3") + [
        ev(1.8, "node.taints", node="n3", group="g", taints=["example.com/gpu=a100:NoSchedule"]), start_window(2)]
    assert floor_of(events) == (2, 2)


def test_node_floor_not_ready_and_deleted_nodes_are_not_counted():
    events = nodes_ready("g", "n1", "n2", "n3") + [start_window(2), ev(3, "node.notready", node="n1", group="g"),
                                                   ev(4, "node.ready", node="n1", group="g"),
                                                   ev(5, "node.deleted", node="n2", group="g")]
    assert floor_of(events) == (3, 2)
    events.append(ev(6, "node.notready", node="n1", group="g"))
    assert floor_of(events) == (3, 1)


def test_node_floor_is_per_group():
    events = nodes_ready("a", "a1", "a2") + nodes_ready("b", "b1", "b2") + [
        start_window(2), ev(3, "node.taints", node="a1", group="a", taints=["nodeops.rollout/outdated=true:NoSchedule"]),
        ev(3, "node.cordoned", node="a2", group="a")]
    rep = build_report(events)
    assert rep["ready_schedulable_nodes_at_start"] == {"a": 2, "b": 2}
    assert rep["min_ready_schedulable_nodes"] == {"a": 0, "b": 2}


def test_a_pod_born_during_the_rollout_and_evicted_again_moved_twice():
    events = pod_life(0, "a", "Deployment/shop/web") + [start_window(5)]
    events.append(ev(6, "pod.terminating", pod="shop/a", uid="a", owner="Deployment/shop/web", how="evicted",
                     was_ready=True, phase="Running", pdbs=[]))
    events += pod_life(7, "a2", "Deployment/shop/web")
    events.append(ev(9, "pod.terminating", pod="shop/a2", uid="a2", owner="Deployment/shop/web", how="evicted",
                     was_ready=True, phase="Running", pdbs=[]))
    rep = build_report(events)
    assert rep["evictions"]["evicted_pre_existing"] == 1
    assert rep["evictions"]["evicted_born_during_rollout"] == 1
    assert rep["evictions"]["pre_existing_pods"] == 1


def test_pending_counts_the_wait_for_a_node_and_unschedulable_only_the_wait_for_room():
    def born(t, uid):
        return ev(t, "pod.created", pod="shop/" + uid, uid=uid, owner="Deployment/shop/web", node=None)

    def scheduled(t, uid):
        return ev(t, "pod.scheduled", pod="shop/" + uid, uid=uid, owner="Deployment/shop/web", node="n2")

    events = [start_window(5), born(6, "quick"), scheduled(9, "quick"),             # the scheduler's turn: 3 s
              born(6, "full"), ev(7, "pod.unschedulable", pod="shop/full", uid="full"),  # no room from 7 to 40
              ev(8, "pod.unschedulable", pod="shop/full", uid="full"), scheduled(40, "full"),
              born(10, "never"), ev(11, "pod.unschedulable", pod="shop/never", uid="never"), ev(50, "node.ready", node="n9")]
    rep = build_report(events)
    assert rep["max_pending_seconds"] == 40.0          # 'never', from its birth to the log's end
    assert rep["max_unschedulable_seconds"] == 39.0    # 'never', from 11 to the end; 'full' 33
    assert rep["pods_unschedulable"] == 2


def test_requests_attributed_per_client_and_per_replaced_node():
    events = [start_window(1),
              ev(2, "aws.request", action="TerminateInstanceInAutoScalingGroup", client="nodeops.rollout/0.1.0 instance_terminate",
                 mutating=True),
              ev(3, "node.added", node="n1", group="g"), ev(4, "node.deleted", node="n1", group="g")]
    rep = build_report(events)
    assert rep["api_requests"]["kubernetes"][ROLLOUT] == {"total": 1, "mutating": 1}
    assert rep["rollout_requests_per_replaced_node"] == {"kubernetes": 1.0, "aws": 1.0}


def lb(t, instance_id, state, by="asg", **fields):
    return ev(t, "lb.target", target_group="web", instance_id=instance_id, state=state, by=by, **fields)


def test_a_target_serving_no_pod_is_counted_from_its_last_ready_pod_until_it_drains():
    events = [ev(0, "node.added", node="n1", provider_id="aws:///us-east-1a/i-1"),
              ev(0, "node.added", node="n2", provider_id="aws:///us-east-1b/i-2"),
              lb(0, "i-1", "healthy"), lb(0, "i-2", "healthy")]
    events += pod_life(0, "a", "Deployment/shop/web", node="n1") + pod_life(0, "d", "DaemonSet/kube-system/agent", node="n1")
    events.append(start_window(5))
    events.append(ev(10, "pod.terminating", pod="shop/a", uid="a", owner="Deployment/shop/web", node="n1", how="evicted",
                     was_ready=True, phase="Running", pdbs=[]))
    # n1 serves nothing from 10 (its DaemonSet pod serves no Service) until it drains at 17; n2 never had a pod
    events.append(lb(17, "i-1", "draining", by="load-balancer-controller", until=47))
    events.append(ev(50, "instance.terminated", instance_id="i-2"))
    events.append(lb(50, "i-2", "draining", by="terminated", was="healthy", until=80))
    rep = build_report(events)["load_balancers"]
    assert rep["per_node"] == {"n1": 7.0}
    assert rep["serving_without_ready_pods_seconds"] == 7.0
    assert rep["targets_cut"] == 1
    assert rep["targets_cut_details"] == [{"t": 50, "instance_id": "i-2", "node": "n2", "target_group": "web", "was": "healthy"}]


def test_a_target_that_drains_before_its_pods_go_serves_nothing_for_no_second():
    events = [ev(0, "node.added", node="n1", provider_id="aws:///us-east-1a/i-1"), lb(0, "i-1", "healthy")]
    events += pod_life(0, "a", "Deployment/shop/web", node="n1") + [start_window(5)]
    events.append(lb(6, "i-1", "draining", by="load-balancer-controller", until=36))
    events.append(ev(10, "pod.terminating", pod="shop/a", uid="a", owner="Deployment/shop/web", node="n1", how="evicted",
                     was_ready=True, phase="Running", pdbs=[]))
    events.append(lb(36, "i-1", "unused", by="load-balancer-controller"))
    rep = build_report(events)["load_balancers"]
    assert rep["serving_without_ready_pods_seconds"] == 0.0 and rep["per_node"] == {} and rep["targets_cut"] == 0
