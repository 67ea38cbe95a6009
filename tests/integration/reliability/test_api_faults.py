"""Faults of the APIs a rollout talks to, each through the sandbox's fault interface, each a whole rollout with the
invariant report asserted: AWS throttling everywhere and 500s on EC2 (botocore's retries do the work), and 500s and
429s without a budget cause from the Kubernetes API on every verb (the collection's one Kubernetes retry path)."""

import json


from sandbox.drive.convergence import problems, record, sizes
from tests.integration.modules.conftest import assert_safe

FAST = ["rolling_update_post_drain_delay=1", "rolling_update_validate_passes=1", "rolling_update_validate_interval=1s",
        "rolling_update_max_unavailable=2"]
EC2_ACTIONS = ("DescribeInstances", "DescribeImages", "DescribeLaunchTemplates", "DescribeLaunchTemplateVersions",
               "CreateLaunchTemplateVersion", "DescribeAvailabilityZones", "DescribeSubnets")
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "evict")


def roll(sandbox, tmp_path):
    report = tmp_path / "result.json"
    rc, out = sandbox.run_role_playbook(tmp_path, extra=FAST, report=report)
    return rc, out, json.loads(report.read_text()) if report.exists() else None


def faulted(sandbox, kind):
    """The collection's requests the sandbox answered with an injected fault of ``kind``."""
    return [e for e in sandbox.events() if e["kind"] == "aws.request" and e.get("fault") == kind
            and str(e.get("client") or "").startswith("nodeops.rollout")]


def test_aws_throttling_everywhere_and_ec2_500s_are_ridden_out_by_botocore_retries(sandbox, tmp_path):
    original = sizes(sandbox)
    sandbox.fault(aws_throttle=0.2, aws_5xx={action: 0.1 for action in EC2_ACTIONS}, seed=7)
    rc, out, result = roll(sandbox, tmp_path)
    assert rc == 0, out[-4000:]
    assert result["node_groups"][0]["status"] == "replaced"
    throttled, failed = faulted(sandbox, "throttling"), faulted(sandbox, "internal_error")
    print("AWS requests throttled: %d, EC2 500s: %d" % (len(throttled), len(failed)))
    assert len(throttled) >= 10 and len(failed) >= 3, (len(throttled), len(failed))
    sandbox.fault(clear=True)
    record("aws-throttling-and-500s", sandbox, outcome=result["node_groups"][0]["status"], throttled=len(throttled),
           ec2_500s=len(failed))
    assert problems(sandbox, original, 2) == []
    assert_safe(sandbox.report())


def test_kubernetes_500s_and_429s_on_every_verb_are_retried_to_a_finished_rollout(sandbox, tmp_path):
    original = sizes(sandbox)
    sandbox.fault(k8s_5xx={verb: 0.1 for verb in VERBS}, k8s_429={verb: 0.1 for verb in VERBS}, seed=11)
    rc, out, result = roll(sandbox, tmp_path)
    assert rc == 0, out[-4000:]
    assert result["node_groups"][0]["status"] == "replaced"
    sent = [e for e in sandbox.events() if e["kind"] == "k8s.request" and str(e.get("client") or "").startswith("nodeops.rollout")]
    answered = [e for e in sent if e.get("injected")]
    codes = sorted({e["code"] for e in answered})
    verbs = sorted({e["verb"] for e in answered})
    print("Kubernetes requests faulted: %d of %d, codes %s, verbs %s" % (len(answered), len(sent), codes, verbs))
    assert codes == [429, 500] and len(answered) >= 10, (len(answered), codes)
    # Which requests a 10 % rate hits depends on how many each verb gets, which timing varies: every verb the rollout
    # sent at least 30 times was faulted at least once (a verb missed so is a 1-in-800 chance, not a defect).
    busy = {verb for verb in {e["verb"] for e in sent} if sum(1 for e in sent if e["verb"] == verb) >= 30}
    assert busy and busy <= set(verbs), (busy, verbs)
    sandbox.fault(clear=True)
    report = sandbox.report()
    record("kubernetes-500s-and-429s", sandbox, outcome=result["node_groups"][0]["status"], faulted=len(answered))
    assert problems(sandbox, original, 2) == []
    assert report["evictions"]["max_evictions_per_pod"] <= 1
