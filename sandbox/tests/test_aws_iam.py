"""``up --iam``: moto's authorizer holds the collection's keys (those of aws.env) to docs/iam-policy.json, answering as AWS
does where moto would not, and the EKS cluster of the sandbox connects the same keys to its API server.

One sandbox started through the CLI; the collection's keys are read from the aws.env it writes, the policy is changed
with the sandbox's own (unchecked) keys, and the requests are made with boto3 and the official Kubernetes client."""

import base64
import json
import os
import re
import subprocess
import sys
import time

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.signers import RequestSigner
from kubernetes import client

from sandbox.aws import iam
from sandbox.aws.sandbox import rest_action
from sandbox.kube import eks_token

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    state_dir = str(tmp_path_factory.mktemp("iam"))
    subprocess.run([sys.executable, "-m", "sandbox", "up", "--state-dir", state_dir, "--detach", "--iam", "--nodes", "1",
                    "--azs", "1", "--speed", "40"], cwd=ROOT, check=True, capture_output=True, timeout=240)
    with open(os.path.join(state_dir, "sandbox.json"), encoding="utf-8") as fh:
        state = json.load(fh)
    with open(os.path.join(state_dir, "aws.env"), encoding="utf-8") as fh:
        keys = dict(re.findall(r"^export (AWS_[A-Z_]+)=(.*)$", fh.read(), re.M))
    yield {"dir": state_dir, "state": state, "keys": (keys["AWS_ACCESS_KEY_ID"], keys["AWS_SECRET_ACCESS_KEY"])}
    subprocess.run([sys.executable, "-m", "sandbox", "down", "--state-dir", state_dir], cwd=ROOT, check=False,
                   capture_output=True, timeout=60)


def aws(box, service, keys=None):
    key, secret = keys or box["keys"]
    return boto3.client(service, region_name=box["state"]["region"], endpoint_url=box["state"]["aws_url"],
                        aws_access_key_id=key, aws_secret_access_key=secret)


def refusal(call):
    with pytest.raises(ClientError) as error:
        call()
    return error.value.response["Error"]


@pytest.fixture
def without(box):
    """Take statements out of the collection's policy for one test (the whole policy is put back after it)."""
    admin = aws(box, "iam", ("testing", "testing"))

    def take_out(*sids):
        policy = iam.docs_policy()
        policy["Statement"] = [statement for statement in policy["Statement"] if statement["Sid"] not in sids]
        iam.put_policy(admin, policy)
    yield take_out
    iam.put_policy(admin, iam.docs_policy())


def test_the_collection_keys_are_an_iam_user_s_held_to_the_policy(box):
    assert box["keys"][0] != "testing" and box["state"]["iam"] is True
    assert aws(box, "autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    # an action of no statement: refused, named with the user
    error = refusal(lambda: aws(box, "autoscaling").delete_auto_scaling_group(AutoScalingGroupName="sandbox-nodes"))
    assert error["Code"] == "AccessDenied" and "user/nodeops-rollout is not authorized to perform: " \
        "autoscaling:DeleteAutoScalingGroup" in error["Message"]
    # the sandbox's own keys are not checked
    assert aws(box, "iam", ("testing", "testing")).list_users()["Users"]


def test_a_refusal_of_a_json_rest_json_or_cbor_service_is_read_as_aws_answers_it(box, without):
    without("ReadAmiIdsFromSsmParameters", "ReadAbortAlarms", "ConnectToEksClusters")
    for call, action in ((lambda: aws(box, "ssm").get_parameter(Name=box["state"]["ssm_parameter"]), "ssm:GetParameter"),
                         (lambda: aws(box, "cloudwatch").describe_alarms(), "cloudwatch:DescribeAlarms"),
                         (lambda: aws(box, "eks").describe_cluster(name="sandbox"), "eks:DescribeCluster")):
        error = refusal(call)
        assert error["Code"] == "AccessDeniedException" and error["Message"].endswith("not authorized to perform: " + action)


def test_the_eks_cluster_names_the_api_server_and_needs_describe_cluster_only(box):
    cluster = aws(box, "eks").describe_cluster(name=box["state"]["eks_cluster"])["cluster"]
    assert cluster["endpoint"] == box["state"]["kube_url"] and cluster["certificateAuthority"]["data"] == ""
    assert refusal(lambda: aws(box, "eks").list_clusters())["Code"] == "AccessDeniedException"


def presigned_token(box, cluster="sandbox", expires=60):
    session = boto3.session.Session(aws_access_key_id=box["keys"][0], aws_secret_access_key=box["keys"][1],
                                    region_name=box["state"]["region"])
    sts = session.client("sts", endpoint_url=box["state"]["aws_url"])
    signer = RequestSigner(sts.meta.service_model.service_id, box["state"]["region"], "sts", "v4",
                           session.get_credentials(), session.events)
    url = signer.generate_presigned_url(
        {"method": "GET", "url": box["state"]["aws_url"] + "/?Action=GetCallerIdentity&Version=2011-06-15", "body": {},
         "headers": {"x-k8s-aws-id": cluster}, "context": {}}, region_name=box["state"]["region"], expires_in=expires,
        operation_name="")
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def kube_with(box, token):
    configuration = client.Configuration()
    configuration.host = box["state"]["kube_url"]
    configuration.api_key = {"authorization": "Bearer " + token}
    api = client.ApiClient(configuration)
    api.user_agent = "nodeops.rollout/0.1.0 test"
    return client.CoreV1Api(api)


def test_an_eks_token_of_the_keys_reaches_the_api_server_which_records_the_key_and_refuses_a_malformed_one(box):
    assert kube_with(box, presigned_token(box)).list_node().items
    with open(os.path.join(box["dir"], "events.jsonl"), encoding="utf-8") as fh:
        identities = [event.get("identity") for event in map(json.loads, fh) if event["kind"] == "k8s.request"
                      and event.get("client", "").startswith("nodeops.rollout")]
    assert identities and identities[-1] == box["keys"][0]
    for token in ("k8s-aws-v1.bm90IGEgdXJs", presigned_token(box, expires=900)):
        with pytest.raises(client.ApiException) as error:
            kube_with(box, token).list_node()
        assert error.value.status == 401


def test_an_eks_token_s_form_is_what_aws_iam_authenticator_requires():
    url = ("https://sts.us-east-1.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15&X-Amz-Algorithm=AWS4-HMAC-SHA256"
           "&X-Amz-Credential=AKIAEXAMPLE%%2F20261129%%2Fus-east-1%%2Fsts%%2Faws4_request&X-Amz-Date=%s&X-Amz-Expires=60"
           "&X-Amz-SignedHeaders=host%%3Bx-k8s-aws-id&X-Amz-Signature=abc")
    now = time.time()

    def header(signed_at, text=url):
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(signed_at))
        return "Bearer k8s-aws-v1." + base64.urlsafe_b64encode((text % stamp).encode()).decode().rstrip("=")
    assert eks_token.access_key(header(now), now) == "AKIAEXAMPLE"
    assert eks_token.access_key("Bearer sandbox-token", now) is None and eks_token.access_key(None, now) is None
    for bad, why in ((header(now - 3600), "within the last 15 minutes"),
                     (header(now, url.replace("%%3Bx-k8s-aws-id", "")), "x-k8s-aws-id"),
                     (header(now, url.replace("Expires=60", "Expires=3600")), "more than 60 s"),
                     (header(now, url.replace("GetCallerIdentity", "AssumeRole")), "GetCallerIdentity")):
        with pytest.raises(ValueError, match=why):
            eks_token.access_key(bad, now)


def test_a_rest_request_is_named_by_its_method_and_path():
    assert rest_action("eks", "GET", "/clusters/sandbox") == "DescribeCluster"
    assert rest_action("eks", "GET", "/clusters") == "ListClusters"
    assert rest_action("autoscaling", "POST", "/") is None   # a query request names its action itself
