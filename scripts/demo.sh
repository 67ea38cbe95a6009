#!/usr/bin/env bash
# The demo (make demo): a real rollout on the embedded sandbox, from a fresh clone.
#
#   1. prepares .venv and the collection layout (the same step as the test command);
#   2. starts a sandbox: 6 nodes over 3 Availability Zones in the Auto Scaling group sandbox-nodes, on the "old" AMI,
#      with a sample workload (Deployments behind PodDisruptionBudgets, a single-replica Deployment, a DaemonSet, and
#      two queue workers without a PodDisruptionBudget, which the rollout's implicit budget keeps one of Ready);
#   3. shows the plan (ansible-playbook nodeops.rollout.plan: check mode, changes nothing);
#   4. runs the upgrade to the "new" AMI (ansible-playbook nodeops.rollout.upgrade);
#   5. prints the rollout's result and the sandbox's invariant report, and the path of the HTML report (the rollout's
#      timeline, plan and nodes, with the invariant report as a section), then stops the sandbox.
#
# DEMO_SPEED (default 10) sets the sandbox's simulated seconds per wall second; DEMO_NODES (default 6) its size;
# DEMO_KUBE (default embedded) its Kubernetes backend: "reference" runs the real kube-apiserver, controllers and
# scheduler (make demo-reference; built from Go modules on first use, which takes minutes once).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
DEMO="$ROOT/.build/demo-${DEMO_KUBE:-embedded}"
STATE="$DEMO/sandbox"
SPEED=${DEMO_SPEED:-10}
NODES=${DEMO_NODES:-6}
KUBE=${DEMO_KUBE:-embedded}

step() { printf '\n==> %s\n' "$*"; }

step "Preparing the virtualenv and the collection layout"
bash scripts/test.sh venv | tail -n 2
PY="$ROOT/.venv/bin/python"
export PATH="$ROOT/.venv/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="$ROOT/.build/collections"
# as an operator would watch it: a task that was skipped is not shown (it did not happen)
export ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_DISPLAY_SKIPPED_HOSTS=false

stop_sandbox() { "$PY" -m sandbox down --state-dir "$STATE" >/dev/null 2>&1 || true; }
trap stop_sandbox EXIT
stop_sandbox
rm -rf "$DEMO"
mkdir -p "$DEMO"

started=$SECONDS
step "Starting the sandbox ($KUBE Kubernetes): $NODES nodes over 3 AZs, speed $SPEED, with the sample workload"
"$PY" -m sandbox up --state-dir "$STATE" --detach --nodes "$NODES" --azs 3 --speed "$SPEED" --kube "$KUBE" \
    --workload sandbox/workloads/demo.yaml --workload sandbox/workloads/worker.yaml

# An inventory with one cluster, as a user writes it; only the endpoint and kubeconfig point at the sandbox.
"$PY" - "$STATE" "$DEMO/inventory.yml" "$PY" <<'PYEOF'
import json, os, sys
state_dir, path, python = sys.argv[1:4]
with open(state_dir + "/sandbox.json", encoding="utf-8") as fh:
    st = json.load(fh)
inventory = {"clusters": {"hosts": {"sandbox": {
    "ansible_python_interpreter": python,
    "rolling_update_aws": {"region": st["region"], "endpoint_url": st["aws_url"]},
    "rolling_update_k8s": {"kubeconfig": st["kubeconfig"]},
    "rolling_update_node_groups": [{"name": st["groups"][0]["name"], "ssm_parameter": st["ssm_parameter"]}],
    "rolling_update_max_unavailable": 1,
    "rolling_update_post_drain_delay": 3,
    "rolling_update_validate_passes": 2,
    "rolling_update_validate_interval": "1s",
    "rolling_update_report_file": os.path.normpath(state_dir + "/../result.json"),
    # an operator's own section of the HTML report: here the sandbox's invariant report, read at the end of the run
    "rolling_update_report_sections": [{"title": "Sandbox invariant report",
                                        "url": st["control_url"] + "/report?client_prefix=nodeops.rollout"}],
}}}}
with open(path, "w", encoding="utf-8") as fh:
    json.dump(inventory, fh, indent=2)
PYEOF
set -a
# shellcheck disable=SC1091
source "$STATE/aws.env"
set +a
unset KUBECONFIG

step "Before: nodes and pods"
"$PY" -m sandbox show --state-dir "$STATE"

step "Plan (check mode: changes nothing)"
ansible-playbook -i "$DEMO/inventory.yml" nodeops.rollout.plan | grep -E '^(TASK \[.*(show the plan|Sum up)|fatal)|^        "|^    "msg": "' || true

step "Upgrade to the new AMI"
ansible-playbook -i "$DEMO/inventory.yml" nodeops.rollout.upgrade |
    grep -E '^(TASK \[nodeops.rollout.rolling_update : (Setup|Scale|Upgrade|Rolling update \| sandbox-nodes \| keep)|PLAY RECAP|fatal)|^sandbox +:|^    "msg": "(sandbox-nodes: step|HTML report)|^        "sandbox-nodes: ' |
    grep -vE '\| (progress|keep its times for the report)\] ' || true

step "HTML report: $DEMO/result.html ($(wc -c <"$DEMO/result.html") bytes; open it in a browser)"

step "After: nodes and pods"
"$PY" -m sandbox show --state-dir "$STATE"

step "Result and invariant report"
"$PY" -m sandbox report --state-dir "$STATE" > "$DEMO/report.json"
"$PY" - "$DEMO/result.json" "$DEMO/report.json" <<'PYEOF'
import json, os, sys
with open(sys.argv[1], encoding="utf-8") as fh:
    result = json.load(fh)
with open(sys.argv[2], encoding="utf-8") as fh:
    report = json.load(fh)
for group in result["node_groups"]:
    steps = len(group["batches"])
    print("node group %s: %s, %s nodes replaced in %d drain step%s, %s evictions, %s restarted without downtime, %ss"
          % (group["name"], group["status"], group["nodes_replaced"], steps, "" if steps == 1 else "s", group["evictions"],
             len(group["restarted"]), group["seconds"]))
    print("  seconds per phase: %s" % json.dumps(group["phase_seconds"]))
print("invariants:")
print("  PDB violations: %d" % report["pdb_violations"])
print("  pods killed without eviction: %d; deleted without eviction: %d"
      % (report["killed_without_eviction"], report["deleted_without_eviction"]))
print("  Ready schedulable nodes: %s at start, lowest %s" % (report["ready_schedulable_nodes_at_start"], report["min_ready_schedulable_nodes"]))
print("  evictions per pre-existing pod: %s (max per pod %s)"
      % (report["evictions"]["per_pre_existing_pod"], report["evictions"]["max_evictions_per_pod"]))
for dep, d in sorted(report["deployments"].items()):
    print("  %-22s seconds with no Ready pod: %s, fewest Ready pods: %s" % (dep, d["zero_ready_seconds"], d["min_ready_pods"]))
print("  API requests per replaced node: %s" % json.dumps(report["rollout_requests_per_replaced_node"]))
bad = report["pdb_violations"] + report["killed_without_eviction"] + report["deleted_without_eviction"]
sys.exit(1 if bad or any(g["status"] != "replaced" for g in result["node_groups"]) else 0)
PYEOF
step "Demo finished in $((SECONDS - started)) s (full report: $DEMO/report.json)"
