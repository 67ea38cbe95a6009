"""The chat notification example (playbooks/hooks/notify_chat.yml) as an operator wires it: rolling_update_hooks posting
to a chat webhook - here a local HTTP endpoint that records what it is sent - when a group's rollout starts, when it
stops (a pause requested mid-rollout) and when it ends (the rerun that resumes it). Each message is the run's one line
with the page's path, and carries no secret: not the webhook's own token, not a credential of the run. The rollout runs
with the demo's workloads and keeps every invariant."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sandbox.drive.tags import PAUSE_TAG, delete_tag, set_tag
from tests.integration.controls import QUICK, assert_invariants, result_of, wait_for

DEMO = "sandbox/workloads/demo.yaml"
NODES, AZS = 4, 2
TOKEN = "T0KEN-b6f1c2d9e8a7"
HOOKS = {"before_rollout": "hooks/notify_chat.yml", "after_rollout": "hooks/notify_chat.yml", "on_failure": "hooks/notify_chat.yml"}


@pytest.fixture(scope="module")
def sandbox(start_sandbox):
    return start_sandbox(nodes=NODES, azs=AZS, speed=20, workloads=[DEMO], pushgateway=True)


@pytest.fixture(scope="module")
def chat():
    """A chat's incoming webhook on the loopback: ``(url, messages)``, each message the JSON body posted."""
    messages = []

    class Webhook(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):  # pylint: disable=invalid-name
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            messages.append({"path": self.path, "body": json.loads(body), "raw": body.decode()})
            self.send_response(200)
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Webhook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d/services/%s" % (server.server_address[1], TOKEN), messages
    server.shutdown()


@pytest.fixture(scope="module")
def runs(sandbox, chat, tmp_path_factory):
    url, messages = chat
    # each run also pushes its metrics to the real Pushgateway
    host_vars = {"rolling_update_hooks": HOOKS, "notify_chat_webhook_url": url, "rolling_update_pushgateway_url": sandbox.pushgateway_url}
    stopped_dir = tmp_path_factory.mktemp("stopped")
    report, output = stopped_dir / "result.json", stopped_dir / "run.log"
    since = sandbox.now()
    # the stopped run also writes its metrics (rolling_update_metrics_file), for the textfile collector
    run = sandbox.start_role_playbook(stopped_dir, str(output), extra=list(QUICK), report=report,
                                      host_vars=dict(host_vars, rolling_update_metrics_file=str(stopped_dir / "rollout.prom")))
    try:
        wait_for(lambda: any(event["kind"] == "node.cordoned" and event["t"] > since for event in sandbox.events()), 300, "first cordon", run)
        set_tag(sandbox, PAUSE_TAG, "true")
        stopped_rc = run.wait(timeout=900)
    finally:
        if run.poll() is None:
            run.kill()
    at_stop, pushed_at_stop = list(messages), sandbox.pushed_metrics()
    delete_tag(sandbox, PAUSE_TAG)
    ended_dir = tmp_path_factory.mktemp("ended")
    ended_report = ended_dir / "result.json"
    rc, out = sandbox.run_role_playbook(ended_dir, extra=list(QUICK), report=ended_report, host_vars=host_vars)
    return {"stopped": (stopped_rc, output.read_text(), report), "metrics": (stopped_dir / "rollout.prom").read_text(),
            "ended": (rc, out, ended_report), "at_stop": at_stop, "messages": list(messages), "invariants": sandbox.report(),
            "pushed": (pushed_at_stop, sandbox.pushed_metrics())}


def test_the_chat_hears_of_the_start_the_stop_and_the_end_in_one_line_each(runs):
    rc, out, report = runs["stopped"]
    assert rc == 0 and result_of(report)["status"] == "paused", out[-3000:]
    rc, out, report = runs["ended"]
    assert rc == 0 and result_of(report)["status"] == "replaced", out[-3000:]
    texts = [message["body"]["text"] for message in runs["messages"]]
    assert [message["path"] for message in runs["messages"]] == ["/services/" + TOKEN] * 4, runs["messages"]
    started, stopped, resumed, ended = texts
    assert started.startswith("cluster: rollout started - sandbox-nodes: ") and len(runs["at_stop"]) == 2, texts
    # the stop says why: the pause requested
    assert stopped.startswith("cluster: rollout ended - sandbox-nodes: paused, ") and " - requested - page " in stopped, stopped
    assert resumed.startswith("cluster: rollout started - sandbox-nodes: "), resumed
    assert ended.startswith("cluster: rollout ended - sandbox-nodes: replaced, "), ended
    # each with the path of its run's page, beside its JSON result
    assert stopped.endswith(" - page %s" % str(runs["stopped"][2]).replace(".json", ".html")), stopped
    assert ended.endswith(" - page %s" % str(runs["ended"][2]).replace(".json", ".html")), ended
    assert all("\n" not in text for text in texts), texts


def test_the_stopped_run_s_metrics_parse_with_both_of_the_official_parsers(runs):
    from prometheus_client.openmetrics.parser import text_string_to_metric_families  # pylint: disable=import-outside-toplevel
    from prometheus_client.parser import text_string_to_metric_families as classic  # pylint: disable=import-outside-toplevel
    samples = {(sample.name, sample.labels.get("status")): sample.value
               for family in text_string_to_metric_families(runs["metrics"]) for sample in family.samples}
    assert samples[("nodeops_rollout_status", "paused")] == 1 and samples[("nodeops_rollout_status", "replaced")] == 0, samples
    assert samples[("nodeops_rollout_nodes_outdated", None)] == NODES, samples
    # the Prometheus text format (what the node_exporter textfile collector parses) reads the same samples
    assert {(sample.name, sample.labels.get("status")) for family in classic(runs["metrics"]) for sample in family.samples} >= set(samples)


def test_each_run_s_metrics_arrive_at_the_pushgateway_and_replace_the_cluster_s_last(runs):
    from prometheus_client.parser import text_string_to_metric_families  # pylint: disable=import-outside-toplevel

    def statuses(text):
        return {sample.labels["status"]: sample.value for family in text_string_to_metric_families(text) for sample in family.samples
                if sample.name == "nodeops_rollout_status" and sample.labels.get("job") == "nodeops_rollout"
                and sample.labels.get("cluster") == "cluster" and sample.labels.get("node_group") == "sandbox-nodes"}

    stopped, ended = runs["pushed"]
    assert statuses(stopped)["paused"] == 1 and statuses(stopped)["replaced"] == 0, stopped
    assert statuses(ended)["replaced"] == 1 and statuses(ended)["paused"] == 0, ended


def test_no_message_carries_a_secret(sandbox, runs):
    secrets = [TOKEN, sandbox.env.get("AWS_SECRET_ACCESS_KEY"), sandbox.env.get("AWS_SESSION_TOKEN")]
    with open(sandbox.collection_kubeconfig, encoding="utf-8") as fh:
        secrets += [line.split(":", 1)[1].strip() for line in fh if line.strip().startswith("token:")]
    for message in runs["messages"]:
        for secret in filter(None, secrets):
            assert secret not in message["raw"], message
    # nor does the run's output print the webhook's URL (the task is no_log)
    assert TOKEN not in runs["stopped"][1] and TOKEN not in runs["ended"][1]


def test_the_stopped_and_resumed_rollout_keeps_every_invariant(runs):
    figures = assert_invariants(runs["invariants"], NODES, 1)
    assert figures["max_evictions_per_pod"] <= 1, figures
