# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Kubernetes connection options shared by every module, one way to build an ApiClient, and API errors as one line.

Each option resolves from the module option, then its K8S_AUTH_* environment variable (``K8S_ENV``).
The connection is chosen in this order, first from the options given explicitly, then from the
options and environment together:

1. ``host`` with ``api_key`` or ``client_cert`` + ``client_key``: that API server, those credentials;
2. ``kubeconfig`` and/or ``context``: that kubeconfig file (default ``$KUBECONFIG`` or ``~/.kube/config``);
3. ``eks_cluster``: endpoint and CA from EKS DescribeCluster, a bearer token signed with the AWS options;
4. ``host`` alone: that API server without credentials;
5. in-cluster service account when ``KUBERNETES_SERVICE_HOST`` is set;
6. ``$KUBECONFIG`` or ``~/.kube/config``.

``validate_certs``, ``ca_cert``, ``client_cert``, ``client_key``, ``api_key``, ``host`` and ``proxy`` (option or
K8S_AUTH_* variable) given alongside modes 2, 5 and 6 override what the kubeconfig or service account says, for every
request (see :func:`_apply_overrides`); with mode 3 only ``validate_certs`` and ``proxy`` apply.
"""

from __future__ import annotations

import atexit
import base64
import json
import os
import re
import tempfile
import time
import traceback

from ansible.module_utils.basic import missing_required_lib
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import (
    HAS_BOTO3,
    VALIDATE_CERTS_SPEC,
    AWSConfigurationError,
    aws_connection,
    aws_error_parts,
    describe_aws_error,
    register_aws_secrets,
)
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.core.permissions import aws_refusal, aws_refusal_text
from ansible_collections.nodeops.rollout.plugins.module_utils.core.version import user_agent

try:
    from kubernetes.client import ApiClient, Configuration
    from kubernetes.client.exceptions import ApiException
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.incluster_config import load_incluster_config
    from kubernetes.config.kube_config import load_kube_config
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None

try:
    import urllib3.exceptions
except ImportError:
    HAS_URLLIB3 = False
else:
    HAS_URLLIB3 = True

try:
    import yaml
    from yaml import YAMLError
except ImportError:
    yaml = None
    KUBECONFIG_ERRORS = (ValueError, TypeError, KeyError)
else:
    # a kubeconfig that is not YAML, or YAML that is not a kubeconfig
    KUBECONFIG_ERRORS = (YAMLError, ValueError, TypeError, KeyError)


# Environment variables consulted, in order, when an option is not set.
K8S_ENV = {
    "kubeconfig": ("K8S_AUTH_KUBECONFIG",),
    "context": ("K8S_AUTH_CONTEXT",),
    "host": ("K8S_AUTH_HOST",),
    "api_key": ("K8S_AUTH_API_KEY",),
    "validate_certs": ("K8S_AUTH_VERIFY_SSL", "K8S_AUTH_VALIDATE_CERTS"),
    "ca_cert": ("K8S_AUTH_SSL_CA_CERT",),
    "client_cert": ("K8S_AUTH_CERT_FILE",),
    "client_key": ("K8S_AUTH_KEY_FILE",),
    "proxy": ("K8S_AUTH_PROXY",),
}

# Merge into a module's argument spec; modules that accept eks_cluster also merge AWS_ARGUMENT_SPEC.
# Environment fallbacks are applied by k8s_client(), which needs to know what was given explicitly.
# The aliases are kubernetes.core's (its k8s_auth_options documentation fragment), so that options written for
# kubernetes.core modules work unchanged here; validate_certs is shared with the AWS options (VALIDATE_CERTS_SPEC).
K8S_ARGUMENT_SPEC = dict(
    kubeconfig=dict(type="path"),
    context=dict(type="str"),
    host=dict(type="str"),
    api_key=dict(type="str", no_log=True),
    validate_certs=dict(VALIDATE_CERTS_SPEC),
    ca_cert=dict(type="path", aliases=["ssl_ca_cert"]),
    client_cert=dict(type="path", aliases=["cert_file"]),
    client_key=dict(type="path", no_log=False, aliases=["key_file"]),
    proxy=dict(type="str"),
    eks_cluster=dict(type="str"),
)

_PATH_OPTIONS = ("kubeconfig", "ca_cert", "client_cert", "client_key")

# Presigned STS URLs in EKS tokens are valid for 60 s when first used; EKS accepts a token for 15 minutes.
EKS_TOKEN_PREFIX = "k8s-aws-v1."
EKS_TOKEN_URL_EXPIRES = 60
EKS_TOKEN_REFRESH_AFTER = 600
EKS_CLUSTER_HEADER = "x-k8s-aws-id"

NO_CONNECTION_MSG = (
    "no Kubernetes connection configured: set host with api_key (or client_cert and client_key), kubeconfig or context, "
    "or eks_cluster (or the K8S_AUTH_* environment variables); no in-cluster service account "
    "(KUBERNETES_SERVICE_HOST) and no kubeconfig file at %s")


class K8sConfigurationError(RolloutError):
    """The Kubernetes options cannot be turned into a working client (the message says which option and why)."""


def _is_module(module_or_params):
    return hasattr(module_or_params, "fail_json") and hasattr(module_or_params, "params")


def _unset(value):
    return value is None or value == ""


def resolve_k8s_options(params, environ=None):
    """Resolve the Kubernetes options: option, then environment.

    Returns ``(options, sources)``; ``sources[name]`` is ``"option"``, the environment variable that supplied the
    value, or ``None``. ``validate_certs`` is a bool or None; paths are expanded.
    """
    environ = os.environ if environ is None else environ
    params = params or {}
    options = {}
    sources = {}
    for name in K8S_ARGUMENT_SPEC:
        value = params.get(name)
        if not _unset(value):
            options[name], sources[name] = value, "option"
            continue
        options[name], sources[name] = None, None
        for var in K8S_ENV.get(name, ()):
            if not _unset(environ.get(var)):
                options[name], sources[name] = environ[var], var
                break

    if options["validate_certs"] is not None and not isinstance(options["validate_certs"], bool):
        try:
            options["validate_certs"] = boolean(options["validate_certs"], strict=True)
        except TypeError:
            raise K8sConfigurationError(
                "%s must be a boolean (true/false, yes/no, 1/0), got %r" % (_source_label(sources, "validate_certs"), options["validate_certs"])) from None

    for name in _PATH_OPTIONS:
        if options[name]:
            options[name] = os.path.expanduser(os.path.expandvars(str(options[name])))
    return options, sources


def _source_label(sources, name):
    source = sources.get(name)
    return name if source in (None, "option") else "%s (%s)" % (source, name)


def _select_mode(values):
    if values.get("host") and (values.get("api_key") or (values.get("client_cert") and values.get("client_key"))):
        return "explicit"
    if values.get("kubeconfig") or values.get("context"):
        return "kubeconfig"
    if values.get("eks_cluster"):
        return "eks"
    if values.get("host"):
        return "explicit"
    return None


def connection_mode(options, sources, environ=None):
    """Return which connection the options select: explicit, kubeconfig, eks, in_cluster or default."""
    environ = os.environ if environ is None else environ
    explicit = {name: value for name, value in options.items() if sources.get(name) == "option"}
    if explicit.get("eks_cluster"):
        conflicting = [name for name in ("kubeconfig", "context", "host", "api_key") if explicit.get(name)]
        if conflicting:
            raise K8sConfigurationError("eks_cluster: cannot be combined with %s; EKS supplies the endpoint and the token, give one or the other"
                                        % ", ".join(conflicting))
    mode = _select_mode(explicit) or _select_mode(options)
    if mode:
        return mode
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return "in_cluster"
    return "default"


def _default_kubeconfig(environ):
    return environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")


def _existing_kubeconfig(paths):
    return any(os.path.exists(os.path.expanduser(p)) for p in paths.split(os.pathsep) if p)


def kubeconfig_contexts(paths):
    """The names of the contexts of the kubeconfig ``paths`` (a list separated as $KUBECONFIG's), in order; None when a
    file cannot be read as one (loading it says what is wrong)."""
    names = []
    for path in (os.path.expanduser(p) for p in paths.split(os.pathsep) if p):
        if not os.path.exists(path):
            continue
        try:
            with open(path, encoding="utf-8") as fh:
                config = yaml.safe_load(fh) if yaml else None
        except (OSError,) + KUBECONFIG_ERRORS:
            return None
        if not isinstance(config, dict) or not isinstance(config.get("contexts") or [], list):
            return None
        names.extend(item["name"] for item in config.get("contexts") or []
                     if isinstance(item, dict) and item.get("name") and item["name"] not in names)
    return names


def _check_context(path, context, sources, environ):
    """Refuse a ``context`` the kubeconfig ``path`` does not have, naming the context (not the kubeconfig, which may
    come from $KUBECONFIG) and the contexts it has."""
    names = kubeconfig_contexts(path)
    if names is not None and context not in names:
        where = "kubeconfig %s" % path if sources.get("kubeconfig") else "the kubeconfig %s (from %s)" % (
            path, "$KUBECONFIG" if path == environ.get("KUBECONFIG") else "its default location")
        raise K8sConfigurationError("%s: %r is not a context of %s; use one of its contexts: %s"
                                    % (_source_label(sources, "context"), context, where, ", ".join(names) or "(none)"))


def _set_overrides(configuration, options, mode):
    if mode != "eks":
        if options["host"]:
            configuration.host = options["host"].rstrip("/")
        if options["api_key"]:
            configuration.api_key = {"authorization": "Bearer %s" % options["api_key"]}
            configuration.api_key_prefix = {}
        if options["ca_cert"]:
            configuration.ssl_ca_cert = options["ca_cert"]
        if options["client_cert"]:
            configuration.cert_file = options["client_cert"]
        if options["client_key"]:
            configuration.key_file = options["client_key"]
    if options["validate_certs"] is not None:
        configuration.verify_ssl = options["validate_certs"]
    if options["proxy"]:
        configuration.proxy = options["proxy"]


def _apply_overrides(configuration, options, mode):
    """Apply host, api_key, ca_cert, client_cert, client_key and validate_certs on top of the chosen connection.

    A kubeconfig whose user has a token (an exec plugin such as ``aws eks get-token`` too) and the in-cluster service
    account leave a refresh hook that the client runs before every request; it copies the kubeconfig's token, server
    and certificates back into the configuration (and installs itself again), which would undo the overrides from the
    first request on. An
    ``api_key`` replaces the kubeconfig's credentials, so its token refresh is dropped; any other override is applied
    again after each refresh.
    """
    _set_overrides(configuration, options, mode)
    hook = configuration.refresh_api_key_hook
    if hook is None or mode in ("eks", "explicit"):
        return
    if options["api_key"]:
        configuration.refresh_api_key_hook = None
    elif any(options[name] for name in ("host", "ca_cert", "client_cert", "client_key", "proxy")) or options["validate_certs"] is not None:
        def refresh_then_override(config):
            hook(config)
            _set_overrides(config, options, mode)
            # the kubeconfig loader's hook installs itself again each time it runs
            config.refresh_api_key_hook = refresh_then_override
        configuration.refresh_api_key_hook = refresh_then_override


def _check_files(options, sources):
    for name in ("ca_cert", "client_cert", "client_key"):
        if options[name] and not os.path.isfile(options[name]):
            raise K8sConfigurationError("%s: file not found: %s" % (_source_label(sources, name), options[name]))


def _temp_file(content, module=None):
    handle, path = tempfile.mkstemp(prefix="nodeops-rollout-", suffix=".pem")
    with os.fdopen(handle, "wb") as stream:
        stream.write(content)
    if module is not None and hasattr(module, "add_cleanup_file"):
        module.add_cleanup_file(path)
    else:
        atexit.register(_remove_quietly, path)
    return path


def _remove_quietly(path):
    try:
        os.remove(path)
    except OSError:
        pass


def eks_token(connection, cluster_name):
    """Return an EKS bearer token: ``k8s-aws-v1.`` + base64url (no padding) of a presigned STS GetCallerIdentity URL.

    The URL is signed (SigV4, query string, 60 s) with the ``x-k8s-aws-id: <cluster>`` header, exactly what
    ``aws eks get-token`` produces, using the credentials of ``connection`` (an AWSConnection).
    """
    from botocore.exceptions import NoCredentialsError  # pylint: disable=import-outside-toplevel
    from botocore.signers import RequestSigner  # pylint: disable=import-outside-toplevel
    sts = connection.client("sts")
    credentials = connection.session.get_credentials()
    if credentials is None:
        raise K8sConfigurationError(describe_aws_error(NoCredentialsError(), "GetCallerIdentity (EKS token)", "EKS cluster %r" % cluster_name))
    signer = RequestSigner(
        sts.meta.service_model.service_id,
        connection.region,
        "sts",
        "v4",
        credentials,
        connection.session.events,
    )
    request = {
        "method": "GET",
        "url": "%s/?Action=GetCallerIdentity&Version=2011-06-15" % sts.meta.endpoint_url.rstrip("/"),
        "body": {},
        "headers": {EKS_CLUSTER_HEADER: cluster_name},
        "context": {},
    }
    url = signer.generate_presigned_url(request, region_name=connection.region, expires_in=EKS_TOKEN_URL_EXPIRES, operation_name="")
    encoded = base64.urlsafe_b64encode(url.encode("utf-8")).decode("ascii").rstrip("=")
    return EKS_TOKEN_PREFIX + encoded


def _eks_error(exc, operation, resource):
    """The K8sConfigurationError of an AWS error while connecting through EKS; a request refused to the identity says
    so as a refused permission (the statement of docs/iam-policy.json that allows it), carried as ``permission``."""
    code, message = aws_error_parts(exc)
    permission = aws_refusal(code, message, operation, resource)
    if permission is None:
        return K8sConfigurationError(describe_aws_error(exc, operation, resource))
    return K8sConfigurationError("%s on %s: %s" % (operation, resource, aws_refusal_text(permission)), permission=permission)


def _eks_configuration(configuration, params, cluster_name, module_name, module):
    if not HAS_BOTO3:
        raise K8sConfigurationError("eks_cluster needs boto3 and botocore: " + missing_required_lib("boto3 and botocore"))
    from botocore.exceptions import BotoCoreError, ClientError  # pylint: disable=import-outside-toplevel
    try:
        connection = aws_connection(params, module_name=module_name)
        eks = connection.client("eks")
    except AWSConfigurationError as exc:
        raise K8sConfigurationError("eks_cluster %r: %s" % (cluster_name, exc)) from None
    if module is not None:
        register_aws_secrets(module, connection.options)
    resource = "EKS cluster %r" % cluster_name
    try:
        cluster = eks.describe_cluster(name=cluster_name)["cluster"]
    except (ClientError, BotoCoreError) as exc:
        raise _eks_error(exc, "DescribeCluster", resource) from None

    endpoint = cluster.get("endpoint")
    if not endpoint:
        raise K8sConfigurationError("%s has no API endpoint yet (status %s)" % (resource, cluster.get("status", "unknown")))
    ca_data = (cluster.get("certificateAuthority") or {}).get("data")
    if ca_data:
        try:
            ca_pem = base64.b64decode(ca_data, validate=True)
        except ValueError:
            raise K8sConfigurationError("%s returned a certificateAuthority that is not base64 data" % resource) from None
        configuration.ssl_ca_cert = _temp_file(ca_pem, module)

    try:
        token = eks_token(connection, cluster_name)
    except (ClientError, BotoCoreError) as exc:
        raise _eks_error(exc, "GetCallerIdentity (EKS token)", resource) from None
    configuration.host = endpoint.rstrip("/")
    configuration.api_key = {"authorization": "Bearer %s" % token}
    configuration.api_key_prefix = {}
    issued = {"at": time.monotonic()}

    def refresh_token(config):
        # Long drains outlive a token: sign a new one before EKS stops accepting the old one.
        if time.monotonic() - issued["at"] >= EKS_TOKEN_REFRESH_AFTER:
            config.api_key = {"authorization": "Bearer %s" % eks_token(connection, cluster_name)}
            issued["at"] = time.monotonic()

    configuration.refresh_api_key_hook = refresh_token
    return configuration


def build_configuration(params, module_name=None, module=None, environ=None):
    """Return a kubernetes Configuration for the options in ``params`` (raises K8sConfigurationError)."""
    if not HAS_KUBERNETES:
        raise K8sConfigurationError(missing_required_lib("kubernetes"))
    environ = os.environ if environ is None else environ
    options, sources = resolve_k8s_options(params, environ)
    mode = connection_mode(options, sources, environ)
    _check_files(options, sources)
    configuration = Configuration()

    if mode == "explicit":
        configuration.host = options["host"].rstrip("/")
    elif mode == "kubeconfig":
        path = options["kubeconfig"] or _default_kubeconfig(environ)
        if not _existing_kubeconfig(path):
            raise K8sConfigurationError("%s: kubeconfig file not found: %s" % (_source_label(sources, "kubeconfig"), path))
        if options["context"]:
            _check_context(path, options["context"], sources, environ)
        try:
            load_kube_config(config_file=path, context=options["context"], client_configuration=configuration, persist_config=False)
        except (ConfigException,) + KUBECONFIG_ERRORS as exc:
            where = "kubeconfig %s" % path + (" context %r" % options["context"] if options["context"] else "")
            raise K8sConfigurationError("%s: cannot load %s: %s" % (_source_label(sources, "kubeconfig"), where, " ".join(str(exc).split()))) from None
    elif mode == "eks":
        _eks_configuration(configuration, params, options["eks_cluster"], module_name, module)
    elif mode == "in_cluster":
        try:
            load_incluster_config(client_configuration=configuration)
        except ConfigException as exc:
            raise K8sConfigurationError("cannot load the in-cluster service account configuration: %s" % exc) from None
    else:
        path = _default_kubeconfig(environ)
        if not _existing_kubeconfig(path):
            raise K8sConfigurationError(NO_CONNECTION_MSG % path)
        try:
            load_kube_config(config_file=path, client_configuration=configuration, persist_config=False)
        except (ConfigException,) + KUBECONFIG_ERRORS as exc:
            raise K8sConfigurationError("kubeconfig: cannot load kubeconfig %s: %s" % (path, " ".join(str(exc).split()))) from None

    _apply_overrides(configuration, options, mode)
    return configuration, options


def k8s_client(module_or_params, module_name=None):
    """Return a kubernetes ApiClient built from the shared Kubernetes options (and the AWS options for eks_cluster).

    ``module_or_params`` is an AnsibleModule (errors fail the module) or a dict of options (errors raise
    K8sConfigurationError). The client's user agent is ``nodeops.rollout/<version> <module-name>``.
    """
    module = module_or_params if _is_module(module_or_params) else None
    params = module.params if module is not None else (module_or_params or {})
    name = module_name or (getattr(module, "_name", None) if module is not None else None)
    if module is not None and not HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"), exception=KUBERNETES_IMPORT_ERROR)
    try:
        configuration, options = build_configuration(params, module_name=name, module=module)
    except K8sConfigurationError as exc:
        if module is None:
            raise
        module.fail_json(msg=str(exc), **exc.details)
        raise  # not reached: fail_json exits
    if module is not None and options.get("api_key"):
        module.no_log_values.add(options["api_key"])
    client = ApiClient(configuration=configuration)
    client.user_agent = user_agent(name)
    return client


def _status_from_body(body):
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if not body:
        return {}
    try:
        status = json.loads(body)
    except ValueError:
        return {"message": body}
    return status if isinstance(status, dict) else {"message": str(status)}


def _connection_error_text(exc):
    reason = getattr(exc, "reason", None)
    if isinstance(reason, Exception):
        text = str(reason)
    else:
        text = str(reason or exc)
    # urllib3 prefixes connection errors with the connection object's repr: "<HTTPSConnection(...) at 0x..>: ..."
    text = re.sub(r"^<[^>]*>:\s*", "", text)
    pool = getattr(exc, "pool", None)
    if pool is not None and getattr(pool, "host", None):
        text = "%s (%s://%s:%s)" % (text, getattr(pool, "scheme", "https"), pool.host, pool.port)
    kind = type(reason).__name__ if isinstance(reason, Exception) else type(exc).__name__
    return kind, text


def k8s_error_parts(exc):
    """Return ``(reason, message)`` for an exception raised by the kubernetes client (or anything else)."""
    if HAS_KUBERNETES and isinstance(exc, ApiException):
        status = _status_from_body(exc.body)
        reason = status.get("reason") or exc.reason or ("HTTP %s" % exc.status if exc.status else "ApiException")
        message = status.get("message") or ""
        return str(reason), message
    if HAS_KUBERNETES and isinstance(exc, ConfigException):
        return "ConfigException", str(exc)
    if isinstance(exc, K8sConfigurationError):
        return "ConfigurationError", str(exc)
    if HAS_URLLIB3 and isinstance(exc, urllib3.exceptions.HTTPError):
        return _connection_error_text(exc)
    return type(exc).__name__, str(exc)


def endpoint_option(params, environ=None):
    """The option that chose the API server a client talks to: ``host``, ``eks_cluster``, ``context`` or ``kubeconfig``."""
    options, _sources = resolve_k8s_options(params, environ)
    for name in ("host", "eks_cluster", "context"):
        if options.get(name):
            return name
    return "kubeconfig"


def describe_k8s_error(exc, verb, obj=None, params=None):
    """One line naming the verb, the object, and the API's reason and message.

    ``describe_k8s_error(exc, "evict", "pod default/web-1")`` gives
    "evict pod default/web-1: TooManyRequests: Cannot evict pod as it would violate the pod's disruption budget.".
    With the module's ``params``, an API server that cannot be reached is named by the option that chose it
    (``host: list nodes: NewConnectionError: ... (https://10.0.0.1:443)``), as errors about options are.
    """
    reason, message = k8s_error_parts(exc)
    where = "%s %s" % (verb, obj) if obj else str(verb)
    text = "%s: %s: %s" % (where, reason, message) if message else "%s: %s" % (where, reason)
    if params is not None and HAS_URLLIB3 and isinstance(exc, (urllib3.exceptions.HTTPError, OSError)):
        text = "%s: %s" % (endpoint_option(params), text)
    return " ".join(text.split())


def k8s_error_details(exc):
    """Structured facts about a Kubernetes error, for fail_json: HTTP status, reason, message, causes."""
    reason, message = k8s_error_parts(exc)
    details = dict(reason=reason, message=" ".join(str(message).split()))
    if HAS_KUBERNETES and isinstance(exc, ApiException):
        status = _status_from_body(exc.body)
        details["status"] = exc.status
        causes = (status.get("details") or {}).get("causes") if isinstance(status.get("details"), dict) else None
        if causes:
            details["causes"] = causes
    return details
