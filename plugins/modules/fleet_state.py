#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: fleet_state
short_description: Join, claim and finish a cluster's turn in a fleet rollout whose ledger is one DynamoDB item
version_added: 0.1.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Keeps the ledger of a fleet rollout (the pinned plan, each cluster's state, the failure budget, the gates' decisions
    and the current run) in one item of a DynamoDB table, so that every worker running the fleet's clusters (one
    C(ansible-playbook) process, the slices of an AWX job, or the jobs of a bulk launch) keeps one order of waves, one
    concurrency cap and one failure budget. The C(nodeops.rollout.fleet) role and playbook call it; see C(docs/fleet.md).
  - Every write carries the item's version as read, so of two workers deciding at once one write lands; the other reads
    again and decides again.
  - O(action=join) pins the cluster's node groups to the targets they resolve to today (O(targets)) and adds the cluster
    to the plan, in the first wave of O(waves) that names one of its O(groups) or matches its name. The plan is pinned
    once O(workers) workers have joined all their clusters, and this action waits for it; a cluster that joins after it
    is not in the plan.
  - O(action=claim) waits for the cluster's turn in run O(run), its wave open (the wave before ended, soaked, its gate
    passed) and fewer than the wave's C(max_concurrency) of its clusters rolling. It answers C(start) (the cluster now
    counts as rolling), C(skip) (done in an earlier run, or not started because the run stopped, with the reason) or
    C(gate) (this worker runs the gate after the wave before, then records it with O(action=gate) and claims again).
    A start records O(holder), the identity the cluster's rollout holds its locks with. A cluster still rolling in run
    O(run) had a worker that stopped before it finished (killed, or its execution node lost); it starts again at once,
    and RV(stopped_holder) names the holder of that attempt, whose locks free themselves when their duration runs out.
    The first claim of a run name never seen starts a new run, with its own failure budget; a worker of an older run is
    turned away.
  - O(action=finish) records the cluster's outcome from its O(result) (C(rolling_update_result)); a failure beyond a
    wave's or the run's budget stops the run (no worker starts another cluster; those rolling finish). With O(busy)
    the cluster is recorded C(busy), not failed (another run held a lock of it); a busy cluster does not count against
    any failure budget, and the next run takes it up.
  - O(action=gate) records the gate decision O(passed) after wave O(wave); O(action=report) reads the ledger.
options:
  table:
    description: The DynamoDB table, whose partition key is the string attribute C(fleet).
    type: str
    required: true
  fleet:
    description: The fleet rollout's name, the item's key. A new plan is a new name.
    type: str
    required: true
  action:
    description: What to do.
    type: str
    choices: [join, claim, finish, gate, report]
    required: true
  cluster:
    description: The cluster (its inventory host name). Required with O(action=join), O(action=claim) and O(action=finish).
    type: str
  groups:
    description: The inventory groups of O(cluster) (C(group_names)), which O(waves) may name.
    type: list
    elements: str
    default: []
  waves:
    description:
      - The waves, in order. Each has C(name), C(clusters) (inventory group names or host name patterns),
        C(max_concurrency) (an integer or a percentage of the wave's clusters, rounded down, at least 1; default 1),
        C(max_failed_clusters) (default 0, so one failure stops the run), C(soak) (a duration after the wave's last cluster
        ended, default 0) and C(gate) (a task file run once before the next wave; its failure stops the run).
      - Required with O(action=join).
    type: list
    elements: raw
  max_failed_clusters:
    description: The run's failure budget across every wave, an integer or a percentage of the fleet; none by default.
    type: raw
  workers:
    description: How many workers run the fleet's clusters; the plan is pinned once they have all joined.
    type: int
    default: 1
  worker_hosts:
    description: The hosts this worker runs (C(ansible_play_hosts_all)); they name the worker.
    type: list
    elements: str
  forks:
    description:
      - The worker's forks (C(ansible_forks)). With fewer forks than O(worker_hosts), clusters waiting for a later wave
        could hold every fork while an earlier wave's cluster waits for one, so O(action=join) refuses it.
    type: int
  node_groups:
    description: The cluster's C(rolling_update_node_groups), with O(action=join).
    type: list
    elements: dict
    default: []
  targets:
    description: What C(nodeops.rollout.launch_template_version) returned in check mode for each of O(node_groups).
    type: list
    elements: dict
    default: []
  run:
    description: The run's name, the same on every worker of one run (the role uses the AWX workflow job's id).
    type: str
  holder:
    description:
      - With O(action=claim), the identity the cluster's rollout holds its node groups' locks with (the role draws one
        per attempt with C(nodeops.rollout.run_id)), recorded in the ledger when the cluster starts.
    type: str
  busy:
    description:
      - With O(action=finish), why the cluster was not rolled - another run holds the lock of one of its node groups. The
        cluster is then C(busy), not C(failed).
    type: str
  result:
    description: The cluster's C(rolling_update_result), with O(action=finish).
    type: dict
  failure:
    description: The message the cluster's rollout failed with, when it failed before writing a result.
    type: str
  report_file:
    description: The cluster's C(rolling_update_report_file); its HTML page beside it is linked from the fleet's page.
    type: str
  base_dir:
    description: The directory a wave's relative C(gate) path is read from (the role gives C(playbook_dir)).
    type: path
  wave:
    description: The index of the wave whose gate was run, with O(action=gate).
    type: int
  passed:
    description: Whether the gate passed.
    type: bool
    default: false
  gate_message:
    description: What the gate said.
    type: str
  poll_interval:
    description: How often a waiting worker reads the ledger again.
    type: raw
    default: 10s
  timeout:
    description: How long O(action=join) and O(action=claim) wait at most.
    type: raw
    default: 24h
  gate_timeout:
    description: How long a gate may run; one that has not answered by then has failed.
    type: raw
    default: 1h
  validate_certs:
    description: Whether the TLS certificate of the DynamoDB endpoint is verified.
    type: bool
    aliases: [verify_ssl]
extends_documentation_fragment:
  - nodeops.rollout.aws
attributes:
  check_mode:
    description: Can run in check mode and return a changed status prediction without modifying the target.
    support: none
  diff_mode:
    description: Returns details on what has changed (or would change in check mode) when run in diff mode.
    support: full
    details: Shows the fleet as its ledger had it when the task started and as the action left it (RV(fleet)); diff
      mode reads the ledger once more, first.
  action_group:
    description: In no action group.
    support: none
    membership: []
    details:
      - The ledger is one DynamoDB item for every cluster of the fleet, in one account, while C(module_defaults) on
        C(group/nodeops.rollout.all) (or C(aws), C(k8s)) carries a cluster's connection - the C(nodeops.rollout.fleet)
        role sets it to each cluster's in turn. So this module is in none of the collection's groups, and the connection
        set on C(group/aws) or C(group/amazon.aws.aws) does not reach it either; set its options on the task, or
        C(module_defaults) on C(nodeops.rollout.fleet_state) (as the role does from C(fleet_store)).
notes:
  - Needs C(dynamodb:GetItem) and C(dynamodb:PutItem) on the table (C(docs/iam-fleet-policy.json)).
  - Times are the controllers' clocks, so the workers' clocks must be synchronized (NTP).
seealso:
  - name: DynamoDB condition expressions
    description: How a conditional write is refused when another writer came first.
    link: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ConditionExpressions.html
"""

EXAMPLES = r"""
- name: Wait for this cluster's turn in the fleet
  nodeops.rollout.fleet_state:
    table: nodeops-fleet
    fleet: eks-1-31-december
    action: claim
    cluster: "{{ inventory_hostname }}"
    run: "{{ awx_workflow_job_id | default(awx_job_id) }}"
    region: eu-west-1
  register: turn
"""

RETURN = r"""
decision:
  description: With O(action=claim), C(start), C(skip) or C(gate).
  returned: action is claim
  type: str
reason:
  description: Why the cluster was skipped, or which gate to run; with O(action=finish), why it failed or is pending.
  returned: action is claim or finish
  type: str
node_groups:
  description: The cluster's node groups with their pinned targets, for C(rolling_update_node_groups).
  returned: action is claim
  type: list
  elements: dict
stopped_holder:
  description:
    - When RV(decision) is C(start) and the cluster was already rolling in this run (its worker stopped before it
      finished), the lock holder of that attempt, else null.
  returned: action is claim
  type: str
gate:
  description: The gate to run (C(wave), C(name), C(file)) when RV(decision) is C(gate).
  returned: decision is gate
  type: dict
outcome:
  description:
    - With O(action=finish), C(succeeded), C(failed), C(pending) (paused, for a later run) or C(busy) (another run held
      its lock, for a later run).
  returned: action is finish
  type: str
in_plan:
  description: With O(action=join), whether the cluster is in the pinned plan.
  returned: action is join
  type: bool
cluster:
  description: With O(action=join) and O(action=report), the entry of O(cluster) in the ledger (none if not in it).
  returned: action is join or report
  type: dict
published:
  description: With O(action=report), the entry of O(cluster) keyed by its name when it is in the ledger, else empty.
  returned: action is report
  type: dict
fleet:
  description:
    - The fleet as the ledger holds it (C(nodeops.rollout.fleet_html) makes its page of it) - C(fleet), C(run),
      C(stopped) (C(cause), C(at)), C(waves) (each with its clusters' C(state), C(reason), C(before), C(after), times
      and C(page)), C(counts) by state.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import AWS_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.runners.fleet_state import run_fleet_state


def argument_spec():
    spec = dict(AWS_ARGUMENT_SPEC)
    spec.update(
        table=dict(type="str", required=True),
        fleet=dict(type="str", required=True),
        action=dict(type="str", choices=["join", "claim", "finish", "gate", "report"], required=True),
        cluster=dict(type="str"),
        groups=dict(type="list", elements="str", default=[]),
        waves=dict(type="list", elements="raw"),
        max_failed_clusters=dict(type="raw"),
        workers=dict(type="int", default=1),
        worker_hosts=dict(type="list", elements="str"),
        forks=dict(type="int"),
        node_groups=dict(type="list", elements="dict", default=[]),
        targets=dict(type="list", elements="dict", default=[]),
        run=dict(type="str"),
        holder=dict(type="str"),
        busy=dict(type="str"),
        result=dict(type="dict"),
        failure=dict(type="str"),
        report_file=dict(type="str"),
        base_dir=dict(type="path"),
        wave=dict(type="int"),
        passed=dict(type="bool", default=False),
        gate_message=dict(type="str"),
        poll_interval=dict(type="raw", default="10s"),
        timeout=dict(type="raw", default="24h"),
        gate_timeout=dict(type="raw", default="1h"),
    )
    return spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), required_if=[("action", "join", ("waves",))])
    run_fleet_state(module)


if __name__ == "__main__":
    main()
