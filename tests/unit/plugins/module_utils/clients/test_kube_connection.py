# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The shared Kubernetes options: which connection is chosen, the EKS token, the user agent and error lines."""

from __future__ import annotations

import base64
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from kubernetes.client import CoreV1Api, V1Eviction, V1ObjectMeta
from kubernetes.client.exceptions import ApiException
from kubernetes.config import incluster_config
from kubernetes.config.config_exception import ConfigException
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.eks.models import eks_backends
from urllib3.exceptions import MaxRetryError

from ansible_collections.nodeops.rollout.plugins.module_utils.clients import kube_connection as k8s
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import AWS_ARGUMENT_SPEC, AWSConnection
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import (
    K8S_ARGUMENT_SPEC,
    K8sConfigurationError,
    describe_k8s_error,
    eks_token,
    k8s_client,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.core.version import COLLECTION_VERSION

pytestmark = pytest.mark.usefixtures("isolated_env")

AWS_KEYS = dict(access_key="AKIDEXAMPLE", secret_key="secret-example", region="us-east-1")
CA_PEM = b"-----BEGIN CERTIFICATE-----\nMIIBdummycertificatedata\n-----END CERTIFICATE-----\n"


def _authorization(client):
    """The Authorization header value the client sends (None without a token)."""
    return client.configuration.auth_settings().get("BearerToken", {}).get("value")


def _write_kubeconfig(path, servers, current):
    contexts = []
    clusters = []
    users = []
    for name, server in servers.items():
        clusters.append({"name": name, "cluster": {"server": server, "insecure-skip-tls-verify": True}})
        users.append({"name": name, "user": {"token": "token-%s" % name}})
        contexts.append({"name": name, "context": {"cluster": name, "user": name}})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": current,
        "clusters": clusters, "users": users, "contexts": contexts,
    }))
    return str(path)


# --- which connection ------------------------------------------------------------------------------------------


def test_k8s_auth_environment_used_when_options_unset(monkeypatch, tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_bytes(CA_PEM)
    monkeypatch.setenv("K8S_AUTH_HOST", "https://env.example:6443")
    monkeypatch.setenv("K8S_AUTH_API_KEY", "env-token")
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "False")
    monkeypatch.setenv("K8S_AUTH_SSL_CA_CERT", str(ca))

    client = k8s_client({})

    assert client.configuration.host == "https://env.example:6443"
    assert _authorization(client) == "Bearer env-token"
    assert client.configuration.verify_ssl is False
    assert client.configuration.ssl_ca_cert == str(ca)


def test_explicit_options_beat_k8s_auth_environment(monkeypatch):
    monkeypatch.setenv("K8S_AUTH_HOST", "https://env.example:6443")
    monkeypatch.setenv("K8S_AUTH_API_KEY", "env-token")
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "false")

    client = k8s_client(dict(host="https://option.example/", api_key="option-token", validate_certs=True))

    assert client.configuration.host == "https://option.example"
    assert _authorization(client) == "Bearer option-token"
    assert client.configuration.verify_ssl is True


def test_verify_ssl_beats_validate_certs_variable(monkeypatch):
    monkeypatch.setenv("K8S_AUTH_VALIDATE_CERTS", "no")
    assert k8s_client(dict(host="https://h", api_key="t")).configuration.verify_ssl is False
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "yes")
    assert k8s_client(dict(host="https://h", api_key="t")).configuration.verify_ssl is True


def test_invalid_boolean_in_environment_names_the_variable(monkeypatch):
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "maybe")
    with pytest.raises(K8sConfigurationError) as err:
        k8s_client(dict(host="https://h", api_key="t"))
    assert str(err.value) == "K8S_AUTH_VERIFY_SSL (validate_certs) must be a boolean (true/false, yes/no, 1/0), got 'maybe'"


def test_client_certificate_credentials(tmp_path):
    cert, key = tmp_path / "client.crt", tmp_path / "client.key"
    cert.write_text("cert")
    key.write_text("key")
    client = k8s_client(dict(host="https://h:6443", client_cert=str(cert), client_key=str(key)))
    assert (client.configuration.cert_file, client.configuration.key_file) == (str(cert), str(key))
    assert _authorization(client) is None


def test_missing_ca_file_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("K8S_AUTH_SSL_CA_CERT", str(tmp_path / "missing.pem"))
    with pytest.raises(K8sConfigurationError) as err:
        k8s_client(dict(host="https://h", api_key="t"))
    assert str(err.value) == "K8S_AUTH_SSL_CA_CERT (ca_cert): file not found: %s" % (tmp_path / "missing.pem")


def test_kubeconfig_and_context_options(tmp_path):
    path = _write_kubeconfig(tmp_path / "kc.yaml", {"blue": "https://blue:6443", "green": "https://green:6443"}, "blue")
    assert k8s_client(dict(kubeconfig=path)).configuration.host == "https://blue:6443"
    client = k8s_client(dict(kubeconfig=path, context="green"))
    assert client.configuration.host == "https://green:6443"
    assert _authorization(client) == "Bearer token-green"


def test_kubeconfig_from_k8s_auth_environment_and_option_overrides(monkeypatch, tmp_path):
    path = _write_kubeconfig(tmp_path / "kc.yaml", {"blue": "https://blue:6443", "green": "https://green:6443"}, "blue")
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", path)
    monkeypatch.setenv("K8S_AUTH_CONTEXT", "green")
    client = k8s_client(dict(validate_certs=True))
    assert client.configuration.host == "https://green:6443"
    assert client.configuration.verify_ssl is True, "validate_certs overrides the kubeconfig's insecure-skip-tls-verify"


def test_host_and_api_key_from_the_environment_apply_on_top_of_a_kubeconfig(monkeypatch, tmp_path):
    # the order the README documents: the kubeconfig is chosen, then every host/api_key/certificate set is applied,
    # and stays applied after the token refresh the kubernetes client runs before each request (_authorization)
    path = _write_kubeconfig(tmp_path / "kc.yaml", {"blue": "https://blue:6443"}, "blue")
    monkeypatch.setenv("K8S_AUTH_HOST", "https://elsewhere:6443/")
    monkeypatch.setenv("K8S_AUTH_API_KEY", "env-token")
    client = k8s_client(dict(kubeconfig=path))
    for _request in range(2):
        assert _authorization(client) == "Bearer env-token"
        assert client.configuration.host == "https://elsewhere:6443"


def test_host_and_certificates_over_a_token_kubeconfig_survive_each_request(tmp_path):
    path = _write_kubeconfig(tmp_path / "kc.yaml", {"blue": "https://blue:6443"}, "blue")
    ca = tmp_path / "ca.crt"
    ca.write_bytes(CA_PEM)
    client = k8s_client(dict(kubeconfig=path, host="https://proxy:8443", ca_cert=str(ca), validate_certs=True))
    for _request in range(2):
        assert _authorization(client) == "Bearer token-blue", "the kubeconfig's token is kept and refreshed"
        assert client.configuration.host == "https://proxy:8443"
        assert client.configuration.ssl_ca_cert == str(ca)
        assert client.configuration.verify_ssl is True


def test_unknown_context_is_named_with_the_kubeconfig_s_contexts(tmp_path):
    path = _write_kubeconfig(tmp_path / "kc.yaml", {"blue": "https://blue:6443", "green": "https://green:6443"}, "blue")
    with pytest.raises(K8sConfigurationError) as err:
        k8s_client(dict(kubeconfig=path, context="purple"))
    assert str(err.value) == "context: 'purple' is not a context of kubeconfig %s; use one of its contexts: blue, green" % path


def test_unknown_context_of_the_kubeconfig_variable_blames_the_context(tmp_path):
    """No kubeconfig option: the kubeconfig is $KUBECONFIG's, and the context given is what is wrong."""
    path = _write_kubeconfig(tmp_path / "kc.yaml", {"sandbox": "https://sandbox:6443"}, "sandbox")
    with pytest.raises(K8sConfigurationError) as err:
        k8s.build_configuration(dict(context="prod-eu1"), environ={"KUBECONFIG": path})
    assert str(err.value) == ("context: 'prod-eu1' is not a context of the kubeconfig %s (from $KUBECONFIG); use one of its "
                              "contexts: sandbox" % path)


def test_missing_kubeconfig_file_is_named(tmp_path):
    with pytest.raises(K8sConfigurationError) as err:
        k8s_client(dict(kubeconfig=str(tmp_path / "nope.yaml")))
    assert str(err.value) == "kubeconfig: kubeconfig file not found: %s" % (tmp_path / "nope.yaml")


def test_in_cluster_service_account_when_running_in_a_pod(monkeypatch, tmp_path):
    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("pod-token")
    ca.write_bytes(CA_PEM)
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(ca))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")

    client = k8s_client({})

    assert client.configuration.host == "https://10.0.0.1:443"
    scheme, token_value = _authorization(client).split(" ", 1)
    assert (scheme.lower(), token_value) == ("bearer", "pod-token")
    assert client.configuration.ssl_ca_cert == str(ca)


def test_a_ca_over_the_in_cluster_service_account_survives_each_request(monkeypatch, tmp_path):
    token, ca, own_ca = tmp_path / "token", tmp_path / "ca.crt", tmp_path / "own-ca.crt"
    token.write_text("pod-token")
    ca.write_bytes(CA_PEM)
    own_ca.write_bytes(CA_PEM)
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(ca))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setenv("K8S_AUTH_SSL_CA_CERT", str(own_ca))

    client = k8s_client({})

    for _request in range(2):
        assert _authorization(client).split(" ", 1)[1] == "pod-token"
        assert client.configuration.host == "https://10.0.0.1:443"
        assert client.configuration.ssl_ca_cert == str(own_ca)


def test_default_kubeconfig_in_home_then_kubeconfig_variable(isolated_env, monkeypatch, tmp_path):
    _write_kubeconfig(isolated_env / ".kube" / "config", {"home": "https://home:6443"}, "home")
    assert k8s_client({}).configuration.host == "https://home:6443"
    other = _write_kubeconfig(tmp_path / "other.yaml", {"other": "https://other:6443"}, "other")
    monkeypatch.setenv("KUBECONFIG", other)
    assert k8s_client({}).configuration.host == "https://other:6443"


def test_nothing_configured_is_a_clear_error(isolated_env):
    with pytest.raises(K8sConfigurationError) as err:
        k8s_client({})
    message = str(err.value)
    assert message.startswith("no Kubernetes connection configured: set host with api_key")
    assert str(isolated_env / ".kube" / "config") in message


def test_nothing_configured_fails_the_module(run_module):
    with pytest.raises(run_module.ModuleExit) as err:
        run_module(dict(AWS_ARGUMENT_SPEC, **K8S_ARGUMENT_SPEC), {}, k8s_client)
    assert err.value.result["msg"].startswith("no Kubernetes connection configured")


def test_eks_cluster_cannot_be_combined_with_host():
    with pytest.raises(K8sConfigurationError) as err:
        k8s_client(dict(AWS_KEYS, eks_cluster="prod", host="https://h", api_key="t"))
    assert str(err.value) == ("eks_cluster: cannot be combined with host, api_key; EKS supplies the endpoint and the token, "
                              "give one or the other")


# --- EKS ------------------------------------------------------------------------------------------------------------


def _decode_token(token):
    assert token.startswith("k8s-aws-v1.")
    payload = token[len("k8s-aws-v1."):]
    assert "=" not in payload
    assert set(payload) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    return base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()


def test_eks_token_is_a_presigned_get_caller_identity_url():
    token = eks_token(AWSConnection(AWS_KEYS), "prod")
    url = urlsplit(_decode_token(token))
    query = {key: values[0] for key, values in parse_qs(url.query).items()}

    assert (url.scheme, url.netloc) == ("https", "sts.us-east-1.amazonaws.com")
    assert query["Action"] == "GetCallerIdentity" and query["Version"] == "2011-06-15"
    assert query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
    assert query["X-Amz-Expires"] == "60"
    assert query["X-Amz-Credential"].startswith("AKIDEXAMPLE/") and query["X-Amz-Credential"].endswith("/us-east-1/sts/aws4_request")
    assert "x-k8s-aws-id" in query["X-Amz-SignedHeaders"].split(";")
    assert len(query["X-Amz-Signature"]) == 64


def test_eks_token_signature_depends_on_the_cluster_name():
    connection = AWSConnection(AWS_KEYS)
    one = parse_qs(urlsplit(_decode_token(eks_token(connection, "one"))).query)["X-Amz-Signature"]
    two = parse_qs(urlsplit(_decode_token(eks_token(connection, "two"))).query)["X-Amz-Signature"]
    assert one != two


def _create_eks_cluster(name):
    eks = AWSConnection(AWS_KEYS).client("eks")
    cluster = eks.create_cluster(name=name, roleArn="arn:aws:iam::%s:role/eks" % DEFAULT_ACCOUNT_ID,
                                 resourcesVpcConfig={"subnetIds": []})["cluster"]
    # moto returns random bytes as the CA; give the cluster a PEM like EKS does.
    eks_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].clusters[name].certificate_authority = {"data": base64.b64encode(CA_PEM).decode()}
    return cluster


@mock_aws
def test_eks_cluster_gives_endpoint_ca_and_token(monkeypatch, tmp_path):
    cluster = _create_eks_cluster("prod")
    # An explicit eks_cluster wins over a kubeconfig from the environment.
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", _write_kubeconfig(tmp_path / "kc.yaml", {"x": "https://x"}, "x"))

    client = k8s_client(dict(AWS_KEYS, eks_cluster="prod"), module_name="nodeops.rollout.node_drain")

    assert client.configuration.host == cluster["endpoint"].rstrip("/")
    with open(client.configuration.ssl_ca_cert, "rb") as stream:
        assert stream.read() == CA_PEM
    authorization = _authorization(client)
    assert authorization.startswith("Bearer k8s-aws-v1.")
    assert "GetCallerIdentity" in _decode_token(authorization[len("Bearer "):])
    assert client.user_agent == "nodeops.rollout/%s node_drain" % COLLECTION_VERSION


@mock_aws
def test_eks_token_is_renewed_before_it_expires(monkeypatch):
    _create_eks_cluster("prod")
    client = k8s_client(dict(AWS_KEYS, eks_cluster="prod"))
    signed = []
    real_token = k8s.eks_token
    monkeypatch.setattr(k8s, "eks_token", lambda connection, name: signed.append(name) or real_token(connection, name))
    now = [k8s.time.monotonic()]
    monkeypatch.setattr(k8s.time, "monotonic", lambda: now[0])

    _authorization(client)
    assert signed == []
    now[0] += k8s.EKS_TOKEN_REFRESH_AFTER + 1
    assert _authorization(client).startswith("Bearer k8s-aws-v1.")
    assert signed == ["prod"]
    _authorization(client)
    assert signed == ["prod"]


@mock_aws
def test_unknown_eks_cluster_is_reported_in_one_line():
    with pytest.raises(K8sConfigurationError) as err:
        k8s_client(dict(AWS_KEYS, eks_cluster="nope"))
    assert str(err.value).startswith("DescribeCluster on EKS cluster 'nope': ResourceNotFoundException:")


def test_eks_cluster_needs_a_region():
    with pytest.raises(K8sConfigurationError) as err:
        k8s_client(dict(eks_cluster="prod", access_key="AKIDEXAMPLE", secret_key="secret-example"))
    assert str(err.value) == "eks_cluster 'prod': region is required: set region, or AWS_REGION / AWS_DEFAULT_REGION"


# --- requests against an API server ----------------------------------------------------------------------------------

PDB_STATUS = {
    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
    "message": "Cannot evict pod as it would violate the pod's disruption budget.",
    "reason": "TooManyRequests",
    "details": {"causes": [{"reason": "DisruptionBudget", "message": "The disruption budget web needs 2 healthy pods and has 2 currently"}]},
    "code": 429,
}


class _ApiHandler(BaseHTTPRequestHandler):
    requests = []

    def _reply(self, code, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 (http.server's naming)
        self.requests.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        if self.path.startswith("/api/v1/nodes/broken"):
            self._reply(500, b"oops, the store is down", "text/plain")
        else:
            self._reply(200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": []})

    def do_POST(self):  # noqa: N802
        length = int(self.headers.get("Content-Length", 0))
        self.rfile.read(length)
        self.requests.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        self._reply(429, PDB_STATUS)

    def log_message(self, *args):
        pass


@pytest.fixture
def api_server():
    _ApiHandler.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ApiHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d" % server.server_address[1], _ApiHandler.requests
    server.shutdown()
    server.server_close()


def test_requests_carry_the_module_user_agent_and_token(api_server, run_module):
    url, requests = api_server
    _module, client = run_module(dict(AWS_ARGUMENT_SPEC, **K8S_ARGUMENT_SPEC), dict(host=url, api_key="option-token"), k8s_client)

    CoreV1Api(client).list_node()

    method, path, headers = requests[-1]
    assert (method, path) == ("GET", "/api/v1/nodes")
    assert headers["user-agent"].startswith("nodeops.rollout/%s" % COLLECTION_VERSION)
    assert headers["authorization"] == "Bearer option-token"


def test_module_name_in_the_user_agent(api_server):
    url, requests = api_server
    CoreV1Api(k8s_client(dict(host=url), module_name="nodeops.rollout.node_taint")).list_node()
    assert requests[-1][2]["user-agent"] == "nodeops.rollout/%s node_taint" % COLLECTION_VERSION
    assert "authorization" not in requests[-1][2], "host alone connects without credentials"


def test_describe_eviction_refused_by_a_disruption_budget(api_server):
    url, _requests = api_server
    api = CoreV1Api(k8s_client(dict(host=url)))
    body = V1Eviction(metadata=V1ObjectMeta(name="web-1", namespace="default"))
    with pytest.raises(ApiException) as err:
        api.create_namespaced_pod_eviction("web-1", "default", body)

    assert describe_k8s_error(err.value, "evict", "pod default/web-1") == (
        "evict pod default/web-1: TooManyRequests: Cannot evict pod as it would violate the pod's disruption budget.")
    details = k8s.k8s_error_details(err.value)
    assert details["status"] == 429 and details["causes"][0]["reason"] == "DisruptionBudget"


def test_describe_error_without_a_status_body(api_server):
    url, _requests = api_server
    with pytest.raises(ApiException) as err:
        CoreV1Api(k8s_client(dict(host=url))).read_node("broken")
    assert describe_k8s_error(err.value, "get", "node broken") == "get node broken: Internal Server Error: oops, the store is down"


def test_describe_connection_refused():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = k8s_client(dict(host="http://127.0.0.1:%d" % port))
    client.configuration.retries = 0
    with pytest.raises(MaxRetryError) as err:
        CoreV1Api(client).list_node()
    line = describe_k8s_error(err.value, "list", "nodes")
    assert line.startswith("list nodes: NewConnectionError: ")
    assert "Connection refused" in line and "127.0.0.1:%d" % port in line and "\n" not in line


def test_describe_config_exception():
    error = ConfigException("Invalid kube-config file. Expected key current-context in kube-config")
    assert describe_k8s_error(error, "load", "kubeconfig /tmp/kc") == (
        "load kubeconfig /tmp/kc: ConfigException: Invalid kube-config file. Expected key current-context in kube-config")


# ---- kubernetes.core's option names --------------------------------------------------------------------------------
# Each alias given to a real AnsibleModule (the argument spec every module merges) reaches the client it builds.

def _module_client(run_module, args):
    return run_module(dict(AWS_ARGUMENT_SPEC, **K8S_ARGUMENT_SPEC), args, k8s_client)


@pytest.mark.parametrize("names", [("ca_cert", "client_cert", "client_key"), ("ssl_ca_cert", "cert_file", "key_file")])
def test_the_certificate_options_by_either_name(run_module, tmp_path, names):
    files = []
    for name in ("ca.pem", "client.crt", "client.key"):
        (tmp_path / name).write_text(name)
        files.append(str(tmp_path / name))
    _module, client = _module_client(run_module, dict(zip(names, files), host="https://h:6443"))
    configuration = client.configuration
    assert (configuration.ssl_ca_cert, configuration.cert_file, configuration.key_file) == tuple(files)


@pytest.mark.parametrize("name", ["validate_certs", "verify_ssl"])
def test_validate_certs_by_either_name(run_module, name):
    _module, client = _module_client(run_module, {"host": "https://h", "api_key": "t", name: False})
    assert client.configuration.verify_ssl is False


def test_host_api_key_and_context_keep_kubernetes_core_s_names(run_module, tmp_path):
    module, client = _module_client(run_module, {"host": "https://h:6443", "api_key": "secret-token"})
    assert client.configuration.host == "https://h:6443" and _authorization(client) == "Bearer secret-token"
    assert "secret-token" in module.no_log_values
    path = tmp_path / "config"
    _write_kubeconfig(path, {"one": "https://one:6443", "two": "https://two:6443"}, "one")
    _module, client = _module_client(run_module, {"kubeconfig": str(path), "context": "two"})
    assert client.configuration.host == "https://two:6443"


def test_proxy_option_and_variable_send_every_request_through_the_proxy(run_module, monkeypatch):
    _module, client = _module_client(run_module, {"host": "https://h", "api_key": "t", "proxy": "http://proxy:3128"})
    assert client.configuration.proxy == "http://proxy:3128"
    monkeypatch.setenv("K8S_AUTH_PROXY", "http://env-proxy:3128")
    assert k8s_client(dict(host="https://h", api_key="t")).configuration.proxy == "http://env-proxy:3128"


def test_proxy_over_a_kubeconfig_survives_each_request(tmp_path):
    path = tmp_path / "config"
    _write_kubeconfig(path, {"one": "https://one:6443"}, "one")
    client = k8s_client(dict(kubeconfig=str(path), proxy="http://proxy:3128"))
    configuration = client.configuration
    if configuration.refresh_api_key_hook:
        configuration.refresh_api_key_hook(configuration)
    assert configuration.proxy == "http://proxy:3128"
