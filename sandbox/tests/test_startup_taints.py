"""Nodes join as real ones do: with the startup taints of their user data's ``--register-with-taints`` and of the
control endpoint's rules, per group and per launch template version, lifted by their agent through the API after a
delay or never; the scheduler keeps pods off them and the invariant report counts them out meanwhile. An operator's
taint through the API does the same. Both backends (``NODEOPS_SANDBOX_KUBE=reference`` runs the marked tests on the
reference one)."""

import base64
import json
import urllib.error
import urllib.request

import pytest

from sandbox.drive.handle import SandboxHandle, startup_taint_flag, wait_until
from sandbox.report import build_report
from sandbox.startup_taints import (DEFAULT_LIFT_AFTER, StartupTaints, check_taints, parse_cli_taint,
                                    register_with_taints)
from sandbox.clock import Clock
from sandbox.events import EventLog

CILIUM = "node.cilium.io/agent-not-ready"
EBS = "ebs.csi.aws.com/agent-not-ready"
GPU = "nvidia.com/gpu"
GROUP, GROUP_2 = "sandbox-nodes", "sandbox-nodes-2"
WAIT = 180


# ---- the kubelet's flag and the endpoint's input, without a sandbox -----------------------------------------------
def b64(text):
    return base64.b64encode(text.encode()).decode()


def test_register_with_taints_is_read_as_the_kubelet_reads_the_flag_wherever_user_data_passes_it():
    assert register_with_taints(b64("#!/bin/bash\n/etc/eks/bootstrap.sh c --kubelet-extra-args "
                                    "'--node-labels=role=gpu --register-with-taints=%s=true:NoSchedule,%s:NoExecute'\n"
                                    % (GPU, EBS))) == [{"key": GPU, "value": "true", "effect": "NoSchedule"},
                                                       {"key": EBS, "effect": "NoExecute"}]
    # nodeadm's kubelet.flags (a YAML list of strings), plain text, and the flag given last wins
    assert register_with_taints('kubelet:\n  flags: ["--register-with-taints=%s:NoSchedule"]\n' % CILIUM) == [
        {"key": CILIUM, "effect": "NoSchedule"}]
    assert register_with_taints(b64("kubelet --register-with-taints a:NoSchedule --register-with-taints=b:NoExecute")) == [
        {"key": "b", "effect": "NoExecute"}]
    assert register_with_taints(b64("#!/bin/bash\n/etc/eks/bootstrap.sh sandbox\n")) == []
    assert register_with_taints(None) == []


@pytest.mark.parametrize("flag, says", [
    ("a=b=c:NoSchedule", "key[=value]:Effect"),
    ("a:NoSchedul", "effect must be one of NoSchedule, PreferNoSchedule, NoExecute"),
    ("a", "key[=value]:Effect"),
    ("-bad:NoSchedule", "not a qualified name"),
])
def test_a_flag_the_kubelet_refuses_is_an_error_naming_it(flag, says):
    with pytest.raises(ValueError) as err:
        register_with_taints("--register-with-taints=" + flag)
    assert "--register-with-taints" in str(err.value) and says in str(err.value)


def test_the_endpoints_taints_are_checked_field_by_field():
    given = [{"key": CILIUM, "effect": "NoSchedule"}, {"key": GPU, "value": "x", "effect": "NoExecute", "lift_after": None}]
    assert check_taints(given) == [
        {"key": CILIUM, "effect": "NoSchedule", "lift_after": DEFAULT_LIFT_AFTER},
        {"key": GPU, "value": "x", "effect": "NoExecute", "lift_after": None}]
    never = "taints[0].effect: effect must be one of NoSchedule, PreferNoSchedule, NoExecute"
    for taints, says in (([{"key": "a", "effect": "Never"}], never),
                         ([{"key": "a", "effect": "NoSchedule", "lift_after": -1}], "taints[0].lift_after"),
                         ([{"key": "a", "effect": "NoSchedule", "lift": 3}], "unknown field(s) lift; allowed: key, value"),
                         ([{"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoSchedule"}], "taints[1]: a second"),
                         ({"key": "a"}, "taints must be a list")):
        with pytest.raises(ValueError) as err:
            check_taints(taints)
        assert says in str(err.value)


def test_the_command_lines_taint_and_the_handles_flag_say_the_same():
    for taint in ({"key": CILIUM, "effect": "NoSchedule", "lift_after": 30.0},
                  {"key": GPU, "value": "true", "effect": "NoExecute", "lift_after": None}):
        assert parse_cli_taint(startup_taint_flag(taint)) == taint
    assert parse_cli_taint(CILIUM + ":NoSchedule") == {"key": CILIUM, "effect": "NoSchedule",
                                                       "lift_after": DEFAULT_LIFT_AFTER}
    with pytest.raises(ValueError, match="after @ comes simulated seconds"):
        parse_cli_taint(CILIUM + ":NoSchedule@soon")


def test_a_versions_rule_replaces_the_groups_which_replaces_every_groups_and_user_data_taints_merge():
    rules = StartupTaints(Clock(10.0), EventLog(Clock(10.0)), lambda: [GROUP, GROUP_2])
    rules.configure({"group": "*", "taints": [{"key": CILIUM, "effect": "NoSchedule", "lift_after": 5}]})
    version_two = [{"key": GPU, "effect": "NoSchedule", "lift_after": None}, {"key": EBS, "effect": "NoExecute", "lift_after": 1}]
    rules.configure({"group": GROUP, "version": 2, "taints": version_two})
    rules.configure({"user_data_lift_after": {EBS: 7, "example.com/x": None}})
    user_data = b64("--register-with-taints=%s:NoExecute,example.com/x=y:PreferNoSchedule" % EBS)

    def taints(group, version, data=None):
        return rules.for_instance({"instance_id": "i-%s%s" % (group, version), "group": group,
                                   "launch_template": {"version": version}, "user_data": data})
    assert taints(GROUP_2, "1") == [{"key": CILIUM, "effect": "NoSchedule", "lift_after": 5.0}]
    assert taints(GROUP, "1") == [{"key": CILIUM, "effect": "NoSchedule", "lift_after": 5.0}]
    # the version's rule: the user data's EBS taint is replaced by the rule's (same key and effect), its other one kept
    assert taints(GROUP, "2", user_data) == [
        {"key": "example.com/x", "value": "y", "effect": "PreferNoSchedule", "lift_after": None},
        {"key": GPU, "effect": "NoSchedule", "lift_after": None}, {"key": EBS, "effect": "NoExecute", "lift_after": 1.0}]
    rules.configure({"group": "*", "taints": []})
    assert taints(GROUP_2, "1", user_data) == [{"key": EBS, "effect": "NoExecute", "lift_after": 7.0},
                                               {"key": "example.com/x", "value": "y", "effect": "PreferNoSchedule",
                                                "lift_after": None}]
    for body, says in (({"group": "sandbox-nodez", "taints": []}, "'sandbox-nodez' is not an Auto Scaling group"),
                       ({"group": GROUP, "version": "latest", "taints": []}, "version: a launch template version number"),
                       ({"group": "*", "version": 2, "taints": []}, "name the group"),
                       ({"group": GROUP}, "taints: the list of taints"),
                       ({"user_data_lift_after": {EBS: "soon"}}, "user_data_lift_after[%s]" % EBS),
                       ({}, "give group and taints")):
        with pytest.raises(ValueError) as err:
            rules.configure(body)
        assert says in str(err.value)


# ---- a sandbox -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def box(tmp_path_factory):
    handle = SandboxHandle.start(str(tmp_path_factory.mktemp("startup-taints")), nodes=2, azs=1, groups=2, speed=20.0,
                                 startup_taints=[{"key": CILIUM, "effect": "NoSchedule", "lift_after": 60}])
    yield handle
    handle.stop()


def node_taints(box, name):
    return [(t.key, t.value, t.effect) for t in box.core().read_node(name).spec.taints or []]


def startup_taints_of(box, name):
    """The node's taints but the node controller's (``node.kubernetes.io/not-ready``, which kube-controller-manager
    removes at its own pace once the node is Ready)."""
    return [t for t in node_taints(box, name) if not t[0].startswith("node.kubernetes.io/")]


def nodes_of(box, group):
    return {n.metadata.name for n in box.core().list_node(label_selector="eks.amazonaws.com/nodegroup=" + group).items}


def ready(node):
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


def grow(box, group, by=1):
    """One more instance in ``group``; the name of its node once it registered."""
    asg = box.aws("autoscaling", user_agent="test-setup")
    size = asg.describe_auto_scaling_groups(AutoScalingGroupNames=[group])["AutoScalingGroups"][0]
    before = nodes_of(box, group)
    asg.update_auto_scaling_group(AutoScalingGroupName=group, MaxSize=size["MaxSize"] + by,
                                  DesiredCapacity=size["DesiredCapacity"] + by)
    wait_until("a new node of %s" % group, lambda: len(nodes_of(box, group) - before) >= by, timeout=WAIT)
    (name,) = sorted(nodes_of(box, group) - before)[:1]
    return name


def schedulable_at(events, t):
    """The report's Ready schedulable nodes per group at simulated time ``t``: its ``ready_schedulable_nodes_at_start``
    for a window opened then (by a request of a client named ``probe``)."""
    probe = {"t": t, "kind": "k8s.request", "client": "probe", "mutating": True, "verb": "patch", "code": 200}
    return build_report([e for e in events if e["t"] < t] + [probe], client_prefix="probe")["ready_schedulable_nodes_at_start"]


def logged(box, check):
    """The event log once ``check(events)`` holds of it."""
    found = []
    wait_until("the event log to show it", lambda: check(found.append(box.events()) or found[-1]), timeout=WAIT)
    return found[-1]


def untainted(events, node):
    """The node's last ``node.taints`` event has no NoSchedule/NoExecute taint."""
    last = [e for e in events if e["kind"] == "node.taints" and e["node"] == node][-1:]
    return bool(last) and not [t for t in last[0]["taints"] if not t.endswith(":PreferNoSchedule")]


def pinned_pod(box, name, node):
    box.core().create_namespaced_pod("default", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": node}, "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "c", "image": "registry.example/app:1"}]}})


def pod_node(box, name):
    pod = box.core().read_namespaced_pod(name, "default")
    return pod.spec.node_name, pod.status.phase


def first(events, kind, **match):
    for e in events:
        if e["kind"] == kind and all(e.get(k) == v for k, v in match.items()):
            return e
    return None


@pytest.mark.reference
def test_the_nodes_of_the_start_have_no_startup_taint(box):
    for group in (GROUP, GROUP_2):
        names = nodes_of(box, group)
        assert len(names) == 2
        for name in names:
            assert startup_taints_of(box, name) == []
    assert [e for e in box.events() if e["kind"] == "node.startup_taints"] == []


@pytest.mark.reference
def test_a_joining_node_keeps_pods_off_until_its_agent_lifts_the_taint(box):
    name = grow(box, GROUP_2)
    assert (CILIUM, None, "NoSchedule") in node_taints(box, name)
    pinned_pod(box, "waits-for-cilium", name)
    wait_until("the pod scheduled once the taint is lifted", lambda: pod_node(box, "waits-for-cilium")[0] == name,
               timeout=WAIT)
    assert CILIUM not in [taint[0] for taint in node_taints(box, name)]
    # the reference backend's log follows the API through watches and the audit log: wait until it has caught up
    events = logged(box, lambda events: first(events, "pod.scheduled", pod="default/waits-for-cilium")
                    and untainted(events, name)
                    and any(e["kind"] == "k8s.request" and e.get("client") == "sandbox-startup-agent" for e in events))
    joined = first(events, "node.startup_taints", node=name)
    assert joined["group"] == GROUP_2 and joined["taints"] == ["%s=:NoSchedule" % CILIUM]
    assert joined["lift_after"] == {"%s=:NoSchedule" % CILIUM: 60.0}
    lifted = first(events, "node.startup_taint_lifted", node=name)
    assert lifted["taint"] == "%s=:NoSchedule" % CILIUM and lifted["after_ready"] >= 60.0
    # the lift is a request of the agent, through the API
    assert any(e["kind"] == "k8s.request" and e.get("client") == "sandbox-startup-agent" and e.get("verb") == "patch"
               and e["t"] >= lifted["t"] - 5 for e in events)
    # the node's taints as events: registered with it, then without it
    taint_events = [e for e in events if e["kind"] == "node.taints" and e["node"] == name]
    assert any("%s=:NoSchedule" % CILIUM in e["taints"] for e in taint_events)
    assert CILIUM not in json.dumps(taint_events[-1]["taints"])
    # Ready, yet tainted: the scheduler kept the pod Pending until the lift, 60 s after Ready at the earliest (a
    # simulated second of slack for the order in which the backend's watches deliver the node and the pod)
    node_ready = first(events, "node.ready", node=name)
    assert node_ready["t"] < lifted["t"]
    assert first(events, "pod.scheduled", pod="default/waits-for-cilium")["t"] >= node_ready["t"] + 59
    # the report counts the node out while it is Ready and tainted, in once the taint is lifted
    assert schedulable_at(events, (node_ready["t"] + lifted["t"]) / 2)[GROUP_2] == 2
    # once its last taint went (the agent's lift, or the node controller's not-ready taint if that came later)
    assert [t for t in taint_events[-1]["taints"] if not t.endswith(":PreferNoSchedule")] == []
    assert schedulable_at(events, max(lifted["t"], taint_events[-1]["t"]) + 0.001)[GROUP_2] == 3
    box.core().delete_namespaced_pod("waits-for-cilium", "default")


@pytest.mark.reference
def test_user_data_taints_and_a_versions_rule_apply_to_that_version_only_and_one_is_never_lifted(box):
    ec2 = box.aws("ec2", user_agent="test-setup")
    template = box.state["groups"][0]["launch_template_id"]
    box.user_data_taint_lifts({EBS: None})
    user_data = "#!/bin/bash\n/etc/eks/bootstrap.sh sandbox --kubelet-extra-args '--register-with-taints=%s:NoExecute'\n" % EBS
    version = ec2.create_launch_template_version(LaunchTemplateId=template, SourceVersion="1",
                                                 LaunchTemplateData={"UserData": b64(user_data)})
    number = version["LaunchTemplateVersion"]["VersionNumber"]
    answer = box.startup_taints(GROUP, [{"key": GPU, "value": "present", "effect": "NoSchedule", "lift_after": 20}],
                                version=number)
    assert {"group": GROUP, "version": number,
            "taints": [{"key": GPU, "value": "present", "effect": "NoSchedule", "lift_after": 20.0}]} in answer["rules"]
    # still on version 1: the rule for every group (the start's), not the version's
    on_one = grow(box, GROUP)
    assert startup_taints_of(box, on_one) == [(CILIUM, None, "NoSchedule")]
    asg = box.aws("autoscaling", user_agent="test-setup")
    asg.update_auto_scaling_group(AutoScalingGroupName=GROUP,
                                  LaunchTemplate={"LaunchTemplateId": template, "Version": str(number)})
    on_new = grow(box, GROUP)
    assert sorted(startup_taints_of(box, on_new)) == [
        (EBS, None, "NoExecute"), (GPU, "present", "NoSchedule")]
    wait_until("the GPU taint lifted", lambda: GPU not in [taint[0] for taint in node_taints(box, on_new)], timeout=WAIT)
    wait_until("the node on version 1 untainted", lambda: node_taints(box, on_one) == [], timeout=WAIT)
    # the EBS taint of the user data is never lifted: the agent still holds it, and the node stays out of the count
    assert startup_taints_of(box, on_new) == [(EBS, None, "NoExecute")]
    assert box.startup_taint_status()["pending"][on_new] == ["%s=:NoExecute" % EBS]
    pinned_pod(box, "waits-for-ebs", on_new)
    events = logged(box, lambda events: untainted(events, on_one) and [
        e["taints"] for e in events if e["kind"] == "node.taints" and e["node"] == on_new][-1] == ["%s=:NoExecute" % EBS])
    assert first(events, "node.startup_taint_lifted", node=on_new, taint="%s=:NoExecute" % EBS) is None
    assert first(events, "node.startup_taints", node=on_new)["launch_template_version"] == str(number)
    assert schedulable_at(events, box.now() + 0.01)[GROUP] == 3   # two of the start and the one of version 1
    assert pod_node(box, "waits-for-ebs") == (None, "Pending")
    box.core().delete_namespaced_pod("waits-for-ebs", "default")


@pytest.mark.reference
def test_an_operators_taint_through_the_api_keeps_pods_off_and_counts_the_node_out(box):
    name = sorted(nodes_of(box, GROUP_2))[0]
    before = schedulable_at(logged(box, lambda events: untainted(events, name)), box.now() + 0.01)[GROUP_2]
    box.core().patch_node(name, {"spec": {"taints": [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]}})
    pinned_pod(box, "not-infra", name)
    wait_until("the taint's event", lambda: first(box.events(), "node.taints", node=name,
                                                  taints=["dedicated=infra:NoSchedule"]) is not None, timeout=WAIT)
    tainted = first(box.events(), "node.taints", node=name, taints=["dedicated=infra:NoSchedule"])
    assert schedulable_at(box.events(), tainted["t"] + 0.01)[GROUP_2] == before - 1
    assert pod_node(box, "not-infra") == (None, "Pending")
    box.core().patch_node(name, {"spec": {"taints": None}})
    wait_until("the pod scheduled once the taint is gone", lambda: pod_node(box, "not-infra")[0] == name, timeout=WAIT)
    box.core().delete_namespaced_pod("not-infra", "default")


@pytest.mark.reference
def test_the_endpoint_refuses_bad_input_naming_the_field(box):
    body = json.dumps({"group": GROUP, "taints": [{"key": CILIUM, "effect": "Sometimes"}]}).encode()
    req = urllib.request.Request(box.state["control_url"] + "/startup-taints", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=30)  # pylint: disable=consider-using-with
    assert err.value.code == 400
    assert "taints[0].effect: effect must be one of NoSchedule, PreferNoSchedule, NoExecute" in json.loads(err.value.read())["error"]


def test_up_refuses_a_startup_taint_it_cannot_read_before_it_starts_anything(tmp_path):
    import subprocess  # pylint: disable=import-outside-toplevel
    import sys  # pylint: disable=import-outside-toplevel
    from sandbox.drive.handle import ROOT  # pylint: disable=import-outside-toplevel
    proc = subprocess.run([sys.executable, "-m", "sandbox", "up", "--state-dir", str(tmp_path),
                           "--startup-taint", CILIUM + ":NoSchedule@30", "--startup-taint", CILIUM + ":Soon"],
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120, check=False)
    assert proc.returncode != 0
    assert "--startup-taint: effect must be one of NoSchedule, PreferNoSchedule, NoExecute, got 'Soon'" in proc.stdout
    assert "KEY[=VALUE]:EFFECT[@SECONDS|@never]" in proc.stdout
    assert not (tmp_path / "sandbox.json").exists()


@pytest.mark.reference
def test_the_startup_taints_command_sets_a_rule_and_prints_them(box):
    import subprocess  # pylint: disable=import-outside-toplevel
    import sys  # pylint: disable=import-outside-toplevel
    from sandbox.drive.handle import ROOT  # pylint: disable=import-outside-toplevel

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "sandbox", "startup-taints", "--state-dir", box.state_dir] + list(args),
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120, check=False)
    done = cli("--group", GROUP_2, "--version", "1", "--taint", "example.com/agent=down:NoExecute@never",
               "--user-data-lift", "example.com/other=5")
    assert done.returncode == 0, done.stdout
    printed = json.loads(done.stdout)
    assert {"group": GROUP_2, "version": 1, "taints": [{"key": "example.com/agent", "value": "down", "effect": "NoExecute",
                                                        "lift_after": None}]} in printed["rules"]
    assert printed["user_data_lift_after"]["example.com/other"] == 5.0
    assert json.loads(cli().stdout)["rules"] == printed["rules"]
    assert cli("--group", GROUP_2, "--version", "1").returncode == 0   # no --taint: the rule is removed
    assert not [r for r in json.loads(cli().stdout)["rules"] if r["group"] == GROUP_2]
    refused = cli("--group", GROUP_2, "--taint", "example.com/agent:Later")
    assert refused.returncode != 0 and "--taint: effect must be one of NoSchedule, PreferNoSchedule, NoExecute" in refused.stdout
    refused = cli("--group", "nope", "--taint", "example.com/agent:NoSchedule")
    assert refused.returncode != 0 and "group: 'nope' is not an Auto Scaling group of this sandbox" in refused.stdout
