# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The shared AWS options: precedence of options over environment, the clear errors, retries and error lines."""

from __future__ import annotations

import os
import re
import socket

import pytest

import botocore.endpoint
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError, ParamValidationError
from moto import mock_aws

from ansible_collections.nodeops.rollout.plugins.module_utils.clients import aws_connection as aws
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import (
    AWS_ARGUMENT_SPEC,
    REGION_REQUIRED_MSG,
    AWSConfigurationError,
    aws_client,
    aws_connection,
    describe_aws_error,
    resolve_aws_options,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.core.version import COLLECTION_VERSION

pytestmark = pytest.mark.usefixtures("isolated_env")

KEYS = dict(access_key="AKIDEXAMPLE", secret_key="secret-example")
COLLECTION_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))


def _write_profile(home, name="dev", region="eu-central-1"):
    (home / "aws-config").write_text("[profile %s]\nregion = %s\n" % (name, region))
    (home / "aws-credentials").write_text("[%s]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profile-secret\n" % name)


# --- region -------------------------------------------------------------------------------------------------


def test_explicit_region_beats_environment(monkeypatch):
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    client = aws_client(dict(KEYS, region="us-west-2"), "autoscaling")
    assert client.meta.region_name == "us-west-2"


def test_aws_region_beats_aws_default_region(monkeypatch):
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    assert aws_client(dict(KEYS), "autoscaling").meta.region_name == "eu-west-1"


def test_aws_default_region_used_when_aws_region_unset(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    assert aws_client(dict(KEYS), "ec2").meta.region_name == "ap-south-1"


def test_empty_environment_value_counts_as_unset(monkeypatch):
    monkeypatch.setenv("AWS_REGION", "")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ca-central-1")
    assert aws_client(dict(KEYS), "ec2").meta.region_name == "ca-central-1"


def test_missing_region_is_a_clear_error():
    with pytest.raises(AWSConfigurationError) as err:
        aws_client(dict(KEYS), "autoscaling")
    assert str(err.value) == "region is required: set region, or AWS_REGION / AWS_DEFAULT_REGION"


def test_missing_region_fails_the_module_with_the_clear_message(run_module, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    with pytest.raises(run_module.ModuleExit) as err:
        run_module(AWS_ARGUMENT_SPEC, {}, lambda m: aws_client(m, "autoscaling"))
    result = err.value.result
    assert result["failed"] is True
    assert result["msg"] == REGION_REQUIRED_MSG


def test_region_from_the_profile_config_when_nothing_else_sets_one(isolated_env):
    _write_profile(isolated_env, region="eu-north-1")
    assert aws_client(dict(profile="dev"), "ec2").meta.region_name == "eu-north-1"


# --- credentials ----------------------------------------------------------------------------------------------


def test_profile_and_explicit_keys_are_mutually_exclusive(isolated_env):
    _write_profile(isolated_env)
    with pytest.raises(AWSConfigurationError) as err:
        aws_client(dict(KEYS, profile="dev", region="us-east-1"), "ec2")
    assert "profile and access_key/secret_key are mutually exclusive" in str(err.value)


def test_profile_and_keys_both_from_environment_name_the_variables(isolated_env, monkeypatch):
    _write_profile(isolated_env)
    monkeypatch.setenv("AWS_PROFILE", "dev")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    with pytest.raises(AWSConfigurationError) as err:
        aws_client(dict(region="us-east-1"), "ec2")
    message = str(err.value)
    assert "AWS_PROFILE" in message and "AWS_ACCESS_KEY_ID" in message and "AWS_SECRET_ACCESS_KEY" in message


def test_explicit_profile_ignores_keys_from_environment(isolated_env, monkeypatch):
    _write_profile(isolated_env)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    connection = aws_connection(dict(profile="dev", region="us-east-1"))
    assert connection.session.get_credentials().access_key == "AKIDPROFILE"


def test_explicit_keys_ignore_profile_from_environment(isolated_env, monkeypatch):
    _write_profile(isolated_env)
    monkeypatch.setenv("AWS_PROFILE", "dev")
    connection = aws_connection(dict(KEYS, region="us-east-1"))
    assert connection.session.get_credentials().access_key == "AKIDEXAMPLE"


def test_key_environment_variables_in_order(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY", "AKIDLEGACY")
    monkeypatch.setenv("AWS_SECRET_KEY", "legacy-secret")
    monkeypatch.setenv("AWS_SECURITY_TOKEN", "legacy-token")
    options, sources = resolve_aws_options({})
    assert (options["access_key"], options["session_token"]) == ("AKIDLEGACY", "legacy-token")
    assert sources["session_token"] == "AWS_SECURITY_TOKEN"

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "env-token")
    credentials = aws_connection(dict(region="us-east-1")).session.get_credentials()
    assert (credentials.access_key, credentials.secret_key, credentials.token) == ("AKIDENV", "env-secret", "env-token")

    credentials = aws_connection(dict(KEYS, region="us-east-1")).session.get_credentials()
    assert (credentials.access_key, credentials.secret_key, credentials.token) == ("AKIDEXAMPLE", "secret-example", "env-token")


def test_access_key_without_secret_key_is_refused():
    with pytest.raises(AWSConfigurationError) as err:
        aws_client(dict(access_key="AKIDEXAMPLE", region="us-east-1"), "ec2")
    assert str(err.value).startswith("access_key and secret_key must be given together: secret_key is missing")


def test_unknown_profile_is_named():
    with pytest.raises(AWSConfigurationError) as err:
        aws_client(dict(profile="nope", region="us-east-1"), "ec2")
    assert "profile 'nope' (from option profile) is not defined" in str(err.value)


def test_secrets_from_environment_are_hidden_from_module_output(run_module, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret-value")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "env-token-value")

    def call(module):
        aws_client(module, "ec2")
        module.fail_json(msg="secret is env-secret-value, token is env-token-value")

    with pytest.raises(run_module.ModuleExit) as err:
        run_module(AWS_ARGUMENT_SPEC, dict(region="us-east-1"), call)
    assert "env-secret-value" not in err.value.result["msg"]
    assert "env-token-value" not in err.value.result["msg"]


# --- endpoint, retry settings, user agent -----------------------------------------------------------------------


def test_endpoint_url_environment_order(monkeypatch):
    monkeypatch.setenv("AWS_URL", "http://127.0.0.1:5999")
    assert aws_client(dict(KEYS, region="us-east-1"), "ec2").meta.endpoint_url == "http://127.0.0.1:5999"
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5055")
    assert aws_client(dict(KEYS, region="us-east-1"), "ec2").meta.endpoint_url == "http://127.0.0.1:5055"
    explicit = aws_client(dict(KEYS, region="us-east-1", endpoint_url="http://localhost:4566"), "ec2")
    assert explicit.meta.endpoint_url == "http://localhost:4566"


def test_retry_settings_reach_botocore():
    client = aws_client(dict(KEYS, region="us-east-1", retry_mode="adaptive", max_attempts=4), "autoscaling")
    assert client.meta.config.retries == {"mode": "adaptive", "total_max_attempts": 4}
    default = aws_client(dict(KEYS, region="us-east-1"), "autoscaling")
    assert default.meta.config.retries == {"mode": "standard", "total_max_attempts": 10}


@pytest.mark.parametrize("params, expected", [
    (dict(retry_mode="legacy"), "retry_mode must be one of standard, adaptive, got 'legacy'"),
    (dict(max_attempts=0), "max_attempts must be an integer of at least 1, got 0"),
    (dict(max_attempts="many"), "max_attempts must be an integer of at least 1, got 'many'"),
])
def test_invalid_retry_settings_name_the_field_and_allowed_values(params, expected):
    with pytest.raises(AWSConfigurationError) as err:
        aws_client(dict(KEYS, region="us-east-1", **params), "ec2")
    assert str(err.value) == expected


def test_invalid_retry_mode_is_refused_by_the_argument_spec(run_module):
    with pytest.raises(run_module.ModuleExit) as err:
        run_module(AWS_ARGUMENT_SPEC, dict(KEYS, region="us-east-1", retry_mode="legacy"), lambda m: None)
    assert "retry_mode" in err.value.result["msg"] and "standard, adaptive" in err.value.result["msg"]


# --- a throttled call is retried to success ----------------------------------------------------------------------

THROTTLING_BODY = (
    b'<ErrorResponse xmlns="https://autoscaling.amazonaws.com/doc/2011-01-01/">'
    b"<Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error>"
    b"<RequestId>4d0c1a2e-0000-4000-8000-000000000000</RequestId></ErrorResponse>"
)


class _RawBody:
    def __init__(self, body):
        self._body = body

    def stream(self, **kwargs):
        yield self._body


def _throttle_first(client, count):
    """Answer the first ``count`` requests with AWS's Throttling error; later ones go on to moto. Returns the attempts."""
    attempts = []

    def before_send(request, **kwargs):
        attempts.append(request.headers.get("User-Agent", b""))
        if len(attempts) <= count:
            return AWSResponse(request.url, 400, {"Content-Type": "text/xml"}, _RawBody(THROTTLING_BODY))
        return None

    client.meta.events.register_first("before-send", before_send)
    return attempts


@pytest.fixture
def no_backoff_sleep(monkeypatch):
    delays = []

    class _Clock:
        @staticmethod
        def sleep(seconds):
            delays.append(seconds)

    monkeypatch.setattr(botocore.endpoint, "time", _Clock)
    return delays


def _make_group(params, name="web"):
    ec2 = aws_client(params, "ec2")
    ec2.create_launch_template(LaunchTemplateName=name, LaunchTemplateData={"ImageId": "ami-12c6146b", "InstanceType": "t3.micro"})
    asg = aws_client(params, "autoscaling")
    asg.create_auto_scaling_group(
        AutoScalingGroupName=name,
        LaunchTemplate={"LaunchTemplateName": name, "Version": "$Latest"},
        MinSize=0,
        MaxSize=3,
        DesiredCapacity=0,
        AvailabilityZones=["us-east-1a"],
    )


@mock_aws
def test_throttled_call_is_retried_to_success(no_backoff_sleep):
    params = dict(KEYS, region="us-east-1")
    _make_group(params)
    client = aws_client(params, "autoscaling", module_name="nodeops.rollout.asg_surge")
    attempts = _throttle_first(client, 2)

    response = client.describe_auto_scaling_groups(AutoScalingGroupNames=["web"])

    assert [g["AutoScalingGroupName"] for g in response["AutoScalingGroups"]] == ["web"]
    assert len(attempts) == 3
    assert response["ResponseMetadata"]["RetryAttempts"] == 2
    assert len(no_backoff_sleep) == 2, "botocore backs off before each retry"
    expected_agent = ("nodeops.rollout/%s asg_surge" % COLLECTION_VERSION).encode()
    assert all(agent.endswith(expected_agent) for agent in attempts), attempts


@mock_aws
def test_throttling_beyond_max_attempts_is_reported_in_one_line(no_backoff_sleep):
    params = dict(KEYS, region="us-east-1", max_attempts=2)
    _make_group(params)
    client = aws_client(params, "autoscaling")
    attempts = _throttle_first(client, 5)

    with pytest.raises(ClientError) as err:
        client.describe_auto_scaling_groups(AutoScalingGroupNames=["web"])

    assert len(attempts) == 2
    assert describe_aws_error(err.value, "DescribeAutoScalingGroups", "Auto Scaling group 'web'") == (
        "DescribeAutoScalingGroups on Auto Scaling group 'web': Throttling: Rate exceeded (gave up after 2 attempts)")


# --- describe_aws_error ---------------------------------------------------------------------------------------------


def test_describe_client_error_names_operation_resource_code_and_message():
    error = ClientError(
        {
            "Error": {
                "Type": "Sender",
                "Code": "ValidationError",
                "Message": "New SetDesiredCapacity value 99 is above max value 3 for the AutoScalingGroup.",
            },
            "ResponseMetadata": {"HTTPStatusCode": 400, "RequestId": "req-1", "RetryAttempts": 0},
        },
        "SetDesiredCapacity",
    )
    assert describe_aws_error(error, "SetDesiredCapacity", "Auto Scaling group 'web'") == (
        "SetDesiredCapacity on Auto Scaling group 'web': ValidationError: "
        "New SetDesiredCapacity value 99 is above max value 3 for the AutoScalingGroup.")


def _closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_describe_endpoint_connection_error():
    endpoint = "http://127.0.0.1:%d" % _closed_port()
    client = aws_client(dict(KEYS, region="us-east-1", endpoint_url=endpoint, max_attempts=1), "autoscaling")
    with pytest.raises(EndpointConnectionError) as err:
        client.describe_auto_scaling_groups(AutoScalingGroupNames=["web"])
    line = describe_aws_error(err.value, "DescribeAutoScalingGroups", "Auto Scaling group 'web'")
    assert line.startswith("DescribeAutoScalingGroups on Auto Scaling group 'web': EndpointConnectionError: Could not connect")
    assert endpoint in line and "\n" not in line


def test_describe_no_credentials_error_says_how_to_give_them():
    client = aws_client(dict(region="us-east-1", max_attempts=1), "autoscaling")
    with pytest.raises(NoCredentialsError) as err:
        client.describe_auto_scaling_groups()
    line = describe_aws_error(err.value, "DescribeAutoScalingGroups")
    assert line.startswith("DescribeAutoScalingGroups: NoCredentialsError: Unable to locate credentials")
    assert "AWS_ACCESS_KEY_ID" in line and "profile" in line


def test_describe_param_validation_error_is_one_line():
    client = aws_client(dict(KEYS, region="us-east-1"), "autoscaling")
    with pytest.raises(ParamValidationError) as err:
        client.set_desired_capacity(AutoScalingGroupName="web", DesiredCapacity="three")
    line = describe_aws_error(err.value, "SetDesiredCapacity", "Auto Scaling group 'web'")
    assert line.startswith("SetDesiredCapacity on Auto Scaling group 'web': ParamValidationError: Parameter validation failed:")
    assert "DesiredCapacity" in line and "\n" not in line


def test_collection_version_matches_galaxy_yml():
    with open(os.path.join(COLLECTION_ROOT, "galaxy.yml")) as stream:
        match = re.search(r"^version:\s*(\S+)\s*$", stream.read(), re.MULTILINE)
    assert match and match.group(1) == COLLECTION_VERSION


def test_every_connection_reads_the_service_models_through_one_loader_that_warm_models_fills():
    params = {"region": "eu-west-1", "access_key": "AKIAEXAMPLE", "secret_key": "secret", "endpoint_url": "http://127.0.0.1:9"}
    aws.warm_models(("autoscaling",))
    loader = aws.shared_loader()
    first = aws.AWSConnection(dict(params)).client("autoscaling")
    second = aws.AWSConnection(dict(params, region="us-west-2")).client("autoscaling")
    assert first.meta.region_name == "eu-west-1" and second.meta.region_name == "us-west-2"
    assert first._loader is loader and second._loader is loader   # pylint: disable=protected-access
    assert len(loader.search_paths) == len(set(loader.search_paths))   # boto3's data path once, however many sessions


# ---- amazon.aws's option names -------------------------------------------------------------------------------------
# Each alias given to a real AnsibleModule (the argument spec every module merges) reaches the boto3 client it builds.

def _module_connection(run_module, args):
    from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import K8S_ARGUMENT_SPEC
    spec = dict(AWS_ARGUMENT_SPEC, **K8S_ARGUMENT_SPEC)
    return run_module(spec, args, aws_connection)


@pytest.mark.parametrize("name", ["access_key", "aws_access_key_id", "aws_access_key", "ec2_access_key"])
def test_every_name_of_the_access_key_signs_the_requests(run_module, name):
    secret = {"access_key": "secret_key", "aws_access_key_id": "aws_secret_access_key", "aws_access_key": "aws_secret_key",
              "ec2_access_key": "ec2_secret_key"}[name]
    module, connection = _module_connection(run_module, {name: "AKIDALIAS", secret: "alias-secret", "aws_region": "eu-west-1"})
    credentials = connection.session.get_credentials()
    assert (credentials.access_key, credentials.secret_key) == ("AKIDALIAS", "alias-secret")
    assert "alias-secret" in module.no_log_values


@pytest.mark.parametrize("name", ["session_token", "aws_session_token", "security_token", "aws_security_token"])
def test_every_name_of_the_session_token_reaches_the_credentials_and_is_hidden(run_module, name):
    module, connection = _module_connection(run_module, dict(KEYS, region="us-east-1", **{name: "token-by-alias"}))
    assert connection.session.get_credentials().token == "token-by-alias"
    assert "token-by-alias" in module.no_log_values


@pytest.mark.parametrize("name", ["region", "aws_region", "ec2_region"])
def test_every_name_of_the_region_chooses_the_region(run_module, name):
    _module, connection = _module_connection(run_module, dict(KEYS, **{name: "ap-southeast-2"}))
    assert connection.client("autoscaling").meta.region_name == "ap-southeast-2"


@pytest.mark.parametrize("name", ["endpoint_url", "aws_endpoint_url", "ec2_url"])
def test_every_name_of_the_endpoint_url_sends_the_requests_there(run_module, name):
    _module, connection = _module_connection(run_module, dict(KEYS, region="us-east-1", **{name: "http://127.0.0.1:4566"}))
    assert connection.client("ec2").meta.endpoint_url == "http://127.0.0.1:4566"


@pytest.mark.parametrize("name", ["profile", "aws_profile"])
def test_every_name_of_the_profile_reads_that_profile(run_module, isolated_env, name):
    _write_profile(isolated_env, "dev", "eu-central-1")
    _module, connection = _module_connection(run_module, {name: "dev"})
    assert connection.region == "eu-central-1" and connection.session.get_credentials().access_key == "AKIDPROFILE"


def _verify(client):
    return client._endpoint.http_session._verify  # pylint: disable=protected-access


def test_aws_ca_bundle_verifies_the_endpoints_with_that_bundle(run_module, tmp_path):
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    _module, connection = _module_connection(run_module, dict(KEYS, region="us-east-1", aws_ca_bundle=str(bundle)))
    assert _verify(connection.client("autoscaling")) == str(bundle)


def test_aws_ca_bundle_from_the_environment_and_a_missing_one_is_named(run_module, monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_CA_BUNDLE", str(tmp_path / "missing.pem"))
    with pytest.raises(run_module.ModuleExit) as err:
        _module_connection(run_module, dict(KEYS, region="us-east-1"))
    assert err.value.result["msg"] == "aws_ca_bundle: file not found: %s (from AWS_CA_BUNDLE)" % (tmp_path / "missing.pem")


@pytest.mark.parametrize("name", ["validate_certs", "verify_ssl"])
def test_validate_certs_false_turns_verification_off_even_with_a_bundle(run_module, tmp_path, name):
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    _module, connection = _module_connection(run_module, dict(KEYS, region="us-east-1", aws_ca_bundle=str(bundle), **{name: False}))
    assert _verify(connection.client("autoscaling")) is False


def test_certificates_are_verified_by_default(run_module):
    _module, connection = _module_connection(run_module, dict(KEYS, region="us-east-1"))
    # botocore's own CA bundle (a path), never False
    assert connection.options["validate_certs"] is True and _verify(connection.client("autoscaling")) not in (False, None)


def _unreachable(endpoint="https://autoscaling.eu-west-9.amazonaws.com/"):
    return EndpointConnectionError(endpoint_url=endpoint)


def test_an_endpoint_url_on_a_closed_port_is_named_with_the_error(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_URL", raising=False)
    endpoint = "http://127.0.0.1:%d" % _closed_port()
    params = dict(KEYS, region="us-east-1", endpoint_url=endpoint, max_attempts=1)
    with pytest.raises(EndpointConnectionError) as err:
        aws_client(params, "autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=["web"])
    line = describe_aws_error(err.value, "DescribeAutoScalingGroups", "Auto Scaling group 'web'", params)
    assert line.startswith("endpoint_url: %s cannot be reached: DescribeAutoScalingGroups on Auto Scaling group 'web': "
                           "EndpointConnectionError: Could not connect" % endpoint), line
    assert "region" not in line


def test_an_endpoint_url_from_the_environment_is_named_with_its_variable(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    line = describe_aws_error(_unreachable("http://127.0.0.1:9/"), "DescribeAutoScalingGroups", None, dict(KEYS, region="us-east-1"))
    assert line.startswith("endpoint_url: http://127.0.0.1:9 (from AWS_ENDPOINT_URL) cannot be reached: "), line


def test_a_region_botocore_does_not_know_is_named_with_the_known_ones(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_URL", raising=False)
    line = describe_aws_error(_unreachable(), "DescribeAutoScalingGroups", None, dict(KEYS, region="eu-west-9"))
    assert line.startswith("region: 'eu-west-9' is not a region botocore knows; use one of "), line
    assert "eu-west-1" in line and "us-east-1" in line and "autoscaling.eu-west-9.amazonaws.com" in line and "\n" not in line


def test_a_known_region_s_endpoint_that_cannot_be_reached_is_named_not_the_region(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_URL", raising=False)
    line = describe_aws_error(_unreachable("https://autoscaling.eu-west-1.amazonaws.com/"), "DescribeAutoScalingGroups", None,
                              dict(KEYS, region="eu-west-1"))
    assert line == ('DescribeAutoScalingGroups: EndpointConnectionError: Could not connect to the endpoint URL: '
                    '"https://autoscaling.eu-west-1.amazonaws.com/"'), line


def test_an_html_500_names_the_endpoint_and_the_status_not_an_aws_code(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    error = ClientError({"Error": {"Code": "500", "Message": "Internal Server Error"},
                         "ResponseMetadata": {"HTTPStatusCode": 500, "RetryAttempts": 0}}, "DescribeAutoScalingGroups")
    params = dict(KEYS, region="us-east-1", endpoint_url="http://127.0.0.1:8080")
    line = describe_aws_error(error, "DescribeAutoScalingGroups", "Auto Scaling group 'web'", params)
    assert line == ("DescribeAutoScalingGroups on Auto Scaling group 'web': HTTP 500: http://127.0.0.1:8080 answered HTTP 500 "
                    "(Internal Server Error) with no AWS error in it (a proxy or a server in front of AWS?)"), line
