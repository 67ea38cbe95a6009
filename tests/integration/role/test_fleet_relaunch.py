"""A fleet worker relaunched while its killed run's lock still stands resumes the cluster instead of failing on it.

Two clusters in two waves (c-2, then c-3; no failure allowed), one worker over both, as an ansible-runner process. The
worker is SIGKILLed (its whole process group) while it drains c-2: c-2's Lease stays with the killed run, which renewed
it last just then, and the ledger still says c-2 is rolling. The worker is relaunched at once with the same fleet run,
as AWX relaunches a job whose execution node was lost. It finds the lock held by its own run's earlier attempt, waits
for it to free, and resumes c-2 from its state tags to the end: the group at its original sizes, no state tag, nothing
suspended, no node of ours cordoned or tainted. The ledger records c-2 succeeded (not failed), the run's budget is not
spent, and c-3 rolls after it. Every cluster's invariant report is clean.
"""

import json
import os
import signal
import subprocess
from datetime import datetime, timezone

import boto3
import pytest
import yaml
from kubernetes import client

from sandbox.drive.handle import BIN, ROOT, SandboxHandle, wait_until
from tests.integration.controls import group_view, lock_holder, node_marks
from tests.integration.role.test_fleet import GROUP, TABLE, assert_clean, host_vars, on_image, runner_env

CLUSTERS = ("c-2", "c-3")
KILLED = "c-2"
WAVES = [{"name": "first", "clusters": ["c-2"]}, {"name": "second", "clusters": ["c-3"]}]
NODES, AZS, MAX_UNAVAILABLE = 4, 2, 2
# the lock's duration: how long the relaunched worker waits at most for the killed run's lock; long enough that the
# relaunch reads the lock before it expires however slow the machine starts it
LOCK = 60
RUN = "fleet-run-7"
DEMO = os.path.join(ROOT, "sandbox", "workloads", "demo.yaml")
LOCK_NAMESPACE = "kube-system"


def evicted_by_us(handle, since):
    return [e for e in handle.events() if e["t"] >= since and e["kind"] == "pod.terminating" and e.get("how") == "evicted"
            and str(e.get("client") or "").startswith("nodeops.rollout")]


def launch(handles, work, store, name):
    """The worker: one ansible-runner process over both clusters, in a session of its own (its process group)."""
    private = os.path.join(work, name)
    os.makedirs(os.path.join(private, "env"), exist_ok=True)
    inventory = os.path.join(private, "inventory.yml")
    hosts = {cluster: host_vars(cluster, handles[cluster], work) for cluster in CLUSTERS}
    with open(inventory, "w", encoding="utf-8") as fh:
        yaml.safe_dump({"clusters": {"hosts": hosts}}, fh, sort_keys=False)
    extra = {"fleet_name": "fleet-relaunch", "fleet_store": store, "fleet_waves": WAVES, "fleet_workers": 1,
             "fleet_run": RUN, "fleet_poll_interval": "1s",
             "rolling_update_max_unavailable": MAX_UNAVAILABLE, "rolling_update_post_drain_delay": 1,
             "rolling_update_validate_interval": "1s", "rolling_update_validate_passes": 1,
             "rolling_update_node_ready_timeout": "5m", "rolling_update_drain_timeout": "2m",
             "rolling_update_lock_duration": "%ds" % LOCK}
    with open(os.path.join(private, "env", "extravars"), "w", encoding="utf-8") as fh:
        json.dump(extra, fh)
    log = open(os.path.join(private, "stdout.txt"), "w", encoding="utf-8")  # pylint: disable=consider-using-with
    proc = subprocess.Popen([os.path.join(BIN, "ansible-runner"), "run", private, "--playbook",
                             os.path.join(ROOT, "playbooks", "fleet.yml"), "--inventory", inventory, "--forks", str(len(CLUSTERS))],
                            cwd=work, env=runner_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return proc, private, log


def output_of(private):
    with open(os.path.join(private, "stdout.txt"), encoding="utf-8") as fh:
        return fh.read()


def renewed_now(handle, group=GROUP):
    """The killed run's Lease as if it had just renewed it when it died (the worst case: its whole duration to wait)."""
    api = client.CoordinationV1Api(handle.kube("test-setup"))
    lease = api.read_namespaced_lease("nodeops-rollout-" + group, LOCK_NAMESPACE)
    lease.spec.renew_time = datetime.now(timezone.utc)
    api.replace_namespaced_lease("nodeops-rollout-" + group, LOCK_NAMESPACE, lease)
    return lease.spec.holder_identity


@pytest.fixture(scope="module")
def relaunched(tmp_path_factory):
    handles = {}
    try:
        for name in CLUSTERS:
            handles[name] = SandboxHandle.start(str(tmp_path_factory.mktemp(name)), nodes=NODES, azs=AZS, groups=1, speed=20.0,
                                                workloads=[DEMO])
        work = str(tmp_path_factory.mktemp("fleet"))
        account = handles[KILLED].state
        store = {"table": TABLE, "region": account["region"], "endpoint_url": account["aws_url"],
                 "access_key": "testing", "secret_key": "testing"}
        dynamodb = boto3.client("dynamodb", region_name=store["region"], endpoint_url=store["endpoint_url"],
                                aws_access_key_id="testing", aws_secret_access_key="testing")
        dynamodb.create_table(TableName=TABLE, AttributeDefinitions=[{"AttributeName": "fleet", "AttributeType": "S"}],
                              KeySchema=[{"AttributeName": "fleet", "KeyType": "HASH"}], BillingMode="PAY_PER_REQUEST")
        original = {name: group_view(handle) for name, handle in handles.items()}
        since = handles[KILLED].now()
        proc, killed_dir, log = launch(handles, work, store, "worker-b")
        try:
            wait_until("the worker's first eviction on %s" % KILLED, lambda: evicted_by_us(handles[KILLED], since) or proc.poll() is not None,
                       timeout=900, interval=0.2)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            log.close()
        killed = {"output": output_of(killed_dir), "evicted": bool(evicted_by_us(handles[KILLED], since)),
                  "view": group_view(handles[KILLED]), "holder": renewed_now(handles[KILLED])}
        proc, private, log = launch(handles, work, store, "worker-b-relaunched")
        rc = proc.wait(timeout=1500)
        log.close()
        item = dynamodb.get_item(TableName=TABLE, Key={"fleet": {"S": "fleet-relaunch"}}, ConsistentRead=True)["Item"]
        yield {"killed": killed, "rc": rc, "output": output_of(private), "original": original,
               "ledger": json.loads(item["document"]["S"]), "handles": handles,
               "after": {name: (group_view(handle), node_marks(handle), lock_holder(handle), on_image(handle, "new"))
                         for name, handle in handles.items()},
               "reports": {name: assert_clean(name, handle) for name, handle in handles.items()}}
    finally:
        for handle in handles.values():
            handle.stop()


def test_the_worker_was_killed_while_it_drained_and_left_the_cluster_mid_rollout(relaunched):
    killed = relaunched["killed"]
    assert killed["evicted"], killed["output"][-6000:]
    # what the killed run left: the group surged, its state tags, AZRebalance suspended, its lock
    assert killed["view"]["state_tags"] and "AZRebalance" in killed["view"]["suspended"], killed["view"]
    assert killed["holder"], killed


def test_the_relaunched_worker_waits_for_its_runs_lock_and_resumes_the_cluster_to_its_end(relaunched):
    output = relaunched["output"]
    assert relaunched["rc"] == 0, output[-8000:]
    # it said whose lock it waited for: the killed run's, an earlier attempt of this fleet run
    assert "held by %s, this run's stopped attempt on %s" % (relaunched["killed"]["holder"], KILLED) in output, output[-8000:]
    view, marks, holder, rolled = relaunched["after"][KILLED]
    original = relaunched["original"][KILLED]
    assert rolled, view
    assert view["sizes"] == original["sizes"] and view["state_tags"] == {} and view["suspended"] == [], view
    assert marks == {} and holder is None, (marks, holder)


def test_the_ledger_records_the_cluster_done_the_budget_unspent_and_the_next_wave_rolled(relaunched):
    ledger = relaunched["ledger"]
    entry = ledger["clusters"][KILLED]
    assert entry["state"] == "succeeded" and entry["attempts"] == 2, entry
    assert ledger["run"]["id"] == RUN and ledger["run"]["stopped"] is None, ledger["run"]
    assert ledger["clusters"]["c-3"]["state"] == "succeeded", ledger["clusters"]["c-3"]
    view, marks, holder, rolled = relaunched["after"]["c-3"]
    assert rolled and view["state_tags"] == {} and view["suspended"] == [] and marks == {} and holder is None, view


def test_every_clusters_invariant_report_is_clean(relaunched):
    assert sorted(relaunched["reports"]) == list(CLUSTERS)
    for name, report in relaunched["reports"].items():
        assert report["pdb_violations"] == 0 and report["killed_without_eviction"] == 0, name
