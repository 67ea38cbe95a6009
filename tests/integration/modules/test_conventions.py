"""The conventions of amazon.aws and kubernetes.core, end to end against the sandbox: modules run with those collections'
option names only; connection options set once through module_defaults on their action groups (group/amazon.aws.aws,
group/kubernetes.core.k8s) or on ours, which extend theirs; and the inventory plugin nodeops.rollout.nodes as a
constructed-capable, cacheable inventory (keyed_groups, compose, groups, strict, filters, the inventory cache)."""

import json
import os
import subprocess
import textwrap

import pytest

from sandbox.drive.handle import BIN, ROOT, collections_path
from tests.integration.modules.conftest import assert_safe

GROUP = "sandbox-nodes"
NODES = 3


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=NODES, azs=3, speed=20)


def bare_env(sandbox, home, collections=()):
    """The sandbox's Ansible environment with no AWS_*, K8S_AUTH_* or KUBECONFIG variable and an empty HOME: a connection
    comes only from what the task, module_defaults or the inventory file say. ``collections``: paths before ours."""
    env = {name: value for name, value in sandbox.ansible_env().items()
           if not name.startswith(("AWS_", "K8S_AUTH_")) and name != "KUBECONFIG"}
    home.mkdir(exist_ok=True)
    env.update(HOME=str(home), AWS_EC2_METADATA_DISABLED="true", AWS_CONFIG_FILE=str(home / "none"),
               AWS_SHARED_CREDENTIALS_FILE=str(home / "none"),
               ANSIBLE_COLLECTIONS_PATH=os.pathsep.join([str(path) for path in collections] + [collections_path()]))
    return env


def run(argv, env):
    proc = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def run_module(sandbox, tmp_path, name, args):
    """``ansible localhost -m nodeops.rollout.<name> -a <args>`` in :func:`bare_env`; the module's result with ``rc``."""
    tree = tmp_path / ("tree-" + name)
    rc, out, err = run([os.path.join(BIN, "ansible"), "localhost", "-i", "localhost,", "-c", "local", "-m", "nodeops.rollout." + name,
                        "-a", json.dumps(args), "-t", str(tree)], bare_env(sandbox, tmp_path / "home"))
    result = json.loads((tree / "localhost").read_text()) if (tree / "localhost").exists() else {}
    result.update(rc=rc, output=out + err)
    return result


def requests_by(sandbox, agent_word, since):
    """AWS and Kubernetes requests after simulated time ``since`` whose user agent ends in ``agent_word``."""
    return [event for event in sandbox.events() if event["kind"] in ("aws.request", "k8s.request") and event["t"] > since
            and str(event.get("client") or "").startswith("nodeops.rollout/") and str(event.get("client")).endswith(" " + agent_word)]


def group_instances(sandbox):
    """``{instance id: (private DNS name, AZ)}`` of the sandbox's group, read by the test itself."""
    group = sandbox.aws("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]
    ids = [instance["InstanceId"] for instance in group["Instances"]]
    reservations = sandbox.aws("ec2").describe_instances(InstanceIds=ids)["Reservations"]
    return {i["InstanceId"]: (i["PrivateDnsName"], i["Placement"]["AvailabilityZone"]) for r in reservations for i in r["Instances"]}


# ---- option names ----------------------------------------------------------------------------------------------------

def test_a_module_runs_with_amazon_aws_and_kubernetes_core_option_names_only(sandbox, tmp_path):
    # without any connection option the bare environment gives none: the names below are what connects
    unconnected = run_module(sandbox, tmp_path, "node_group_info", {"name": GROUP})
    assert unconnected["rc"] != 0 and unconnected["msg"].startswith("region is required"), unconnected["output"][-2000:]

    since = sandbox.now()
    aliases = {"aws_region": sandbox.state["region"], "aws_endpoint_url": sandbox.state["aws_url"],
               "ec2_access_key": "testing", "aws_secret_key": "testing", "aws_security_token": "session-by-alias",
               "host": sandbox.state["kube_url"], "api_key": "sandbox-token", "verify_ssl": False}
    result = run_module(sandbox, tmp_path, "node_group_info", dict(aliases, name=GROUP))
    assert result["rc"] == 0, result["output"][-3000:]
    group = result["node_groups"][0]
    expected = group_instances(sandbox)
    assert group["name"] == GROUP and group["instance_count"] == NODES
    # every instance joined to its Ready node: the Kubernetes options reached the API server too
    assert {i["instance_id"]: (i["node"]["name"], i["az"]) for i in group["instances"]} == expected
    assert all(instance["node"]["ready"] for instance in group["instances"])
    # both APIs were called by the module, and the secrets given by their aliases never show
    kinds = {event["kind"] for event in requests_by(sandbox, "node_group_info", since)}
    assert kinds == {"aws.request", "k8s.request"}
    assert "session-by-alias" not in result["output"] and "sandbox-token" not in result["output"]
    assert_safe(sandbox.report())


# ---- action groups ---------------------------------------------------------------------------------------------------

def stand_in_collections(base):
    """Minimal amazon.aws and kubernetes.core collections: a meta/runtime.yml declaring their groups aws and k8s, as the
    real ones do, and for amazon.aws one module (listed in its group) that returns the options it was given. ``base``
    must not be beside a playbook: ansible-playbook also reads the collections/ directory next to the playbook."""
    aws = base / "ansible_collections" / "amazon" / "aws"
    k8s = base / "ansible_collections" / "kubernetes" / "core"
    for root, group, modules in ((aws, "aws", ["aws_caller_info"]), (k8s, "k8s", [])):
        (root / "meta").mkdir(parents=True)
        (root / "meta" / "runtime.yml").write_text("requires_ansible: '>=2.16.0'\naction_groups:\n  %s: %s\n" % (group, json.dumps(modules)))
    (aws / "plugins" / "modules").mkdir(parents=True)
    (aws / "plugins" / "modules" / "aws_caller_info.py").write_text(textwrap.dedent('''\
        #!/usr/bin/python
        from ansible.module_utils.basic import AnsibleModule
        def main():
            module = AnsibleModule(argument_spec=dict(
                region=dict(type="str", aliases=["aws_region"]), endpoint_url=dict(type="str"),
                access_key=dict(type="str", no_log=False, aliases=["aws_access_key_id"]),
                secret_key=dict(type="str", no_log=True, aliases=["aws_secret_access_key"])))
            module.exit_json(changed=False, given=dict(region=module.params["region"], endpoint_url=module.params["endpoint_url"]))
        if __name__ == "__main__":
            main()
        '''))
    return base


def playbook(path, plays):
    path.write_text(json.dumps(plays))   # JSON is YAML
    return path


def results_task(path):
    return {"name": "Write what the tasks returned", "ansible.builtin.copy": {
        "content": "{{ {'info': info | default(None), 'surge': surge | default(None), 'caller': caller | default(None)} | to_json }}",
        "dest": str(path), "mode": "0600"}}


def connection(sandbox):
    aws = {"aws_region": sandbox.state["region"], "endpoint_url": sandbox.state["aws_url"], "aws_access_key_id": "testing",
           "aws_secret_access_key": "testing"}
    k8s = {"host": sandbox.state["kube_url"], "api_key": "sandbox-token"}
    return aws, k8s


def test_module_defaults_on_the_groups_of_amazon_aws_and_kubernetes_core_reach_asg_surge(sandbox, tmp_path):
    aws, k8s = connection(sandbox)
    out = tmp_path / "results.json"
    # what amazon.aws and kubernetes.core take and these modules do not is left out, not refused
    book = playbook(tmp_path / "play.yml", [{
        "name": "Roll with the connection of an existing play", "hosts": "localhost", "gather_facts": False, "connection": "local",
        "module_defaults": {"group/amazon.aws.aws": dict(aws, aws_config={"retries": {"max_attempts": 3}}),
                            "group/kubernetes.core.k8s": dict(k8s, username="ignored", persist_config=False)},
        "tasks": [
            {"name": "Read the node group", "nodeops.rollout.node_group_info": {"name": GROUP}, "register": "info"},
            {"name": "Plan a surge", "nodeops.rollout.asg_surge": {"name": GROUP, "surge": 1}, "check_mode": True, "register": "surge"},
            results_task(out)]}])
    since = sandbox.now()
    rc, stdout, stderr = run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", str(book)],
                             bare_env(sandbox, tmp_path / "home", [stand_in_collections(tmp_path / "stand-ins")]))
    assert rc == 0, (stdout + stderr)[-3000:]
    results = json.loads(out.read_text())
    assert results["info"]["node_groups"][0]["instance_count"] == NODES
    assert results["surge"]["changed"] is True
    assert results["surge"]["sizes"]["after"] == {"min_size": NODES, "max_size": NODES + 1, "desired_capacity": NODES + 1}
    assert {event["kind"] for event in requests_by(sandbox, "node_group_info", since)} == {"aws.request", "k8s.request"}
    assert requests_by(sandbox, "asg_surge", since) and sandbox.mutating_requests(since=since) == []   # check mode: a plan
    assert_safe(sandbox.report())


@pytest.mark.parametrize("installed", [True, False], ids=["with-amazon-aws", "without"])
def test_module_defaults_on_the_short_groups_aws_and_k8s_reach_asg_surge_and_node_drain(sandbox, tmp_path, installed):
    # group/aws and group/k8s, the short names many playbooks use: ansible-core's own groups, which extend amazon.aws's
    # and kubernetes.core's; these modules take them in the same play, with amazon.aws installed or not
    aws, k8s = connection(sandbox)
    out = tmp_path / "results.json"
    node = sorted(name for name, dummy in group_instances(sandbox).values())[0]
    tasks = [
        {"name": "Plan a surge", "nodeops.rollout.asg_surge": {"name": GROUP, "surge": 1}, "check_mode": True, "register": "surge"},
        {"name": "Pre-flight of a drain", "nodeops.rollout.node_drain": {"nodes": [node]}, "check_mode": True, "register": "info"}]
    if installed:
        tasks.append({"name": "An amazon.aws module", "amazon.aws.aws_caller_info": {}, "register": "caller"})
    book = playbook(tmp_path / "play.yml", [{
        "name": "A play with the short group names", "hosts": "localhost", "gather_facts": False, "connection": "local",
        "module_defaults": {"group/aws": aws, "group/k8s": k8s}, "tasks": tasks + [results_task(out)]}])
    since = sandbox.now()
    rc, stdout, stderr = run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", str(book)],
                             bare_env(sandbox, tmp_path / "home", [stand_in_collections(tmp_path / "stand-ins")] if installed else []))
    assert rc == 0, (stdout + stderr)[-3000:]
    results = json.loads(out.read_text())
    assert results["surge"]["sizes"]["after"] == {"min_size": NODES, "max_size": NODES + 1, "desired_capacity": NODES + 1}
    assert results["info"]["nodes"][node]["status"] in ("would be cordoned and drained", "would be drained"), results["info"]
    if installed:
        assert results["caller"]["given"] == {"region": sandbox.state["region"], "endpoint_url": sandbox.state["aws_url"]}
    assert requests_by(sandbox, "asg_surge", since) and requests_by(sandbox, "node_drain", since)
    assert sandbox.mutating_requests(since=since) == []   # check mode: a plan
    assert_safe(sandbox.report())


def test_our_groups_extend_theirs_and_work_without_them_installed(sandbox, tmp_path):
    aws, k8s = connection(sandbox)
    out = tmp_path / "results.json"
    tasks = [{"name": "Read the node group", "nodeops.rollout.node_group_info": {"name": GROUP}, "register": "info"}]
    play = {"name": "Our groups", "hosts": "localhost", "gather_facts": False, "connection": "local",
            "module_defaults": {"group/nodeops.rollout.aws": aws, "group/nodeops.rollout.k8s": k8s}}
    # with amazon.aws installed, group/nodeops.rollout.aws reaches its modules too
    extended = playbook(tmp_path / "extended.yml", [dict(play, tasks=tasks + [
        {"name": "An amazon.aws module", "amazon.aws.aws_caller_info": {}, "register": "caller"}, results_task(out)])])
    rc, stdout, stderr = run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", str(extended)],
                             bare_env(sandbox, tmp_path / "home", [stand_in_collections(tmp_path / "stand-ins")]))
    assert rc == 0, (stdout + stderr)[-3000:]
    results = json.loads(out.read_text())
    assert results["caller"]["given"] == {"region": sandbox.state["region"], "endpoint_url": sandbox.state["aws_url"]}
    assert results["info"]["node_groups"][0]["instance_count"] == NODES

    # without amazon.aws and kubernetes.core, our groups hold our modules alone
    alone = playbook(tmp_path / "alone.yml", [dict(play, tasks=tasks + [results_task(out)])])
    out.unlink()
    rc, stdout, stderr = run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", str(alone)], bare_env(sandbox, tmp_path / "home2"))
    assert rc == 0, (stdout + stderr)[-3000:]
    assert json.loads(out.read_text())["info"]["node_groups"][0]["instance_count"] == NODES

    # a play naming group/amazon.aws.aws needs amazon.aws installed: ansible-core says so before any task
    theirs = playbook(tmp_path / "theirs.yml", [dict(play, module_defaults={"group/amazon.aws.aws": aws}, tasks=tasks)])
    rc, stdout, stderr = run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", str(theirs)], bare_env(sandbox, tmp_path / "home3"))
    assert rc != 0 and "could not resolve the module_defaults group amazon.aws.aws" in stdout + stderr, stdout + stderr
    assert_safe(sandbox.report())


# ---- the inventory plugin --------------------------------------------------------------------------------------------

def inventory_file(sandbox, directory, **extra):
    path = directory / ("%s.nodes.yml" % extra.pop("stem", "sandbox"))
    config = {"plugin": "nodeops.rollout.nodes", "aws_region": sandbox.state["region"], "aws_endpoint_url": sandbox.state["aws_url"],
              "aws_access_key_id": "testing", "aws_secret_access_key": "testing", "kubeconfig": sandbox.state["kubeconfig"],
              "node_groups": [{"name": GROUP, "image_id": sandbox.state["amis"]["new"]}]}
    config.update(extra)
    path.write_text(json.dumps(config))
    return path


def unwrap(value):
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {key: unwrap(item) for key, item in value.items()}
    if isinstance(value, list):
        return [unwrap(item) for item in value]
    return value


def list_inventory(sandbox, path, home, *options):
    rc, out, err = run([os.path.join(BIN, "ansible-inventory"), "-i", str(path), "--list"] + list(options), bare_env(sandbox, home))
    return rc, (unwrap(json.loads(out)) if rc == 0 else None), err


def members(listed, group):
    return sorted(listed.get(group, {}).get("hosts", []))


def test_keyed_groups_compose_and_groups_make_the_groups_and_variables_the_sandbox_says(sandbox, tmp_path):
    expected = group_instances(sandbox)
    by_zone = {}
    for name, zone in expected.values():
        by_zone.setdefault(zone, []).append(name)
    path = inventory_file(sandbox, tmp_path, strict=True,
                          compose={"rollout_status": "'outdated' if outdated else 'current'", "ansible_host": "instance_id"},
                          keyed_groups=[{"key": "availability_zone", "prefix": "zone"}, {"key": "rollout_status", "prefix": "status"},
                                        {"key": "launch_template_version", "prefix": "lt", "leading_separator": False}],
                          groups={"first_zone": "availability_zone == '%s'" % min(by_zone)})
    rc, listed, err = list_inventory(sandbox, path, tmp_path / "home")
    assert rc == 0, err[-3000:]
    hostvars = listed["_meta"]["hostvars"]
    assert sorted(hostvars) == sorted(name for name, _zone in expected.values())
    for instance_id, (name, zone) in expected.items():
        assert hostvars[name]["instance_id"] == instance_id and hostvars[name]["availability_zone"] == zone
        assert hostvars[name]["ansible_host"] == instance_id and hostvars[name]["rollout_status"] == "outdated"
    assert by_zone and sum(len(names) for names in by_zone.values()) == len(expected)
    for zone, names in by_zone.items():
        assert members(listed, "zone_" + zone.replace("-", "_")) == sorted(names)
    assert members(listed, "status_outdated") == sorted(hostvars) and members(listed, "lt_1") == sorted(hostvars)
    assert members(listed, "first_zone") == sorted(by_zone[min(by_zone)])
    # the connection given by aliases is passed to the role under the option names, the secrets left out
    for name in hostvars:
        assert hostvars[name]["rolling_update_aws"] == {"region": sandbox.state["region"], "endpoint_url": sandbox.state["aws_url"]}

    excluded = min(by_zone)
    path = inventory_file(sandbox, tmp_path, stem="filtered", include_filters=[{"outdated": True}],
                          exclude_filters=[{"availability_zone": excluded}])
    rc, listed, err = list_inventory(sandbox, path, tmp_path / "home")
    assert rc == 0, err[-3000:]
    kept = sorted(name for name, zone in expected.values() if zone != excluded)
    assert sorted(listed["_meta"]["hostvars"]) == kept and members(listed, "outdated") == kept
    assert_safe(sandbox.report())


def test_a_cached_inventory_is_read_again_without_a_request(sandbox, tmp_path):
    cache = tmp_path / "cache"
    path = inventory_file(sandbox, tmp_path, cache=True, cache_plugin="ansible.builtin.jsonfile", cache_connection=str(cache),
                          cache_timeout=3600, keyed_groups=[{"key": "availability_zone", "prefix": "zone"}])
    since = sandbox.now()
    rc, first, err = list_inventory(sandbox, path, tmp_path / "home")
    assert rc == 0, err[-3000:]
    read = len(requests_by(sandbox, "nodes", since))
    assert read > 0 and any(cache.iterdir())

    since = sandbox.now()
    rc, second, err = list_inventory(sandbox, path, tmp_path / "home")
    assert rc == 0, err[-3000:]
    assert requests_by(sandbox, "nodes", since) == [] and second == first

    # --flush-cache reads AWS and Kubernetes again: the cache was what spared the requests
    since = sandbox.now()
    rc, third, err = list_inventory(sandbox, path, tmp_path / "home", "--flush-cache")
    assert rc == 0 and len(requests_by(sandbox, "nodes", since)) == read and third == first
    assert_safe(sandbox.report())


def test_strict_refuses_a_bad_expression_with_one_error_and_without_strict_the_host_stays(sandbox, tmp_path):
    bad = {"compose": {"zone_letter": "availability_zone[-1] | no_such_filter"}}
    path = inventory_file(sandbox, tmp_path, stem="strict", strict=True, **bad)
    # only this plugin reads inventory files here, and a source it cannot parse fails the run (a project's ansible.cfg)
    env = dict(bare_env(sandbox, tmp_path / "home"), ANSIBLE_INVENTORY_ENABLED="nodeops.rollout.nodes",
               ANSIBLE_INVENTORY_UNPARSED_FAILED="true")
    rc, _out, err = run([os.path.join(BIN, "ansible-inventory"), "-i", str(path), "--list"], env)
    assert rc != 0
    messages = [("%s: compose: Could not set zone_letter for host %s: Syntax error in expression: No filter named 'no_such_filter'."
                 % (path, name)) for name, _zone in group_instances(sandbox).values()]
    # ansible-core shows the plugin's error and its cause: one message, for the first host, where the run stopped
    shown = [message for message in messages if message in err]
    assert len(shown) == 1 and err.count("compose:") == err.count(shown[0]), err[-3000:]

    path = inventory_file(sandbox, tmp_path, stem="lenient", strict=False, **bad)
    rc, listed, err = list_inventory(sandbox, path, tmp_path / "home")
    assert rc == 0, err[-3000:]
    assert len(listed["_meta"]["hostvars"]) == NODES
    assert all("zone_letter" not in hostvars for hostvars in listed["_meta"]["hostvars"].values())
    assert_safe(sandbox.report())
