# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""AWS connection options shared by every module, one way to build boto3 clients, and AWS errors as one line.

Options resolve in this order: the module option, then the environment variables listed in ``AWS_ENV``
(first one set wins), then the default. ``profile`` and the static keys are mutually exclusive; when one
side is given as an option, the other side is not taken from the environment (explicit beats environment).
"""

from __future__ import annotations

import importlib.util
import os
import sys

from ansible.module_utils.basic import missing_required_lib
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.nodeops.rollout.plugins.module_utils.core.choices import RETRY_MODES
from ansible_collections.nodeops.rollout.plugins.module_utils.core.errors import RolloutError
from ansible_collections.nodeops.rollout.plugins.module_utils.core.version import user_agent


def _installed(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


# boto3 and botocore are imported when the first AWS client is made: a module run that only talks to Kubernetes does not
# pay for the import (a quarter of a second of CPU, on every run of such a module).
HAS_BOTO3 = _installed("boto3") and _installed("botocore")
BOTO3_IMPORT_ERROR = None if HAS_BOTO3 else "boto3 or botocore is not installed for %s" % sys.executable


def _botocore_exceptions():
    """botocore's exceptions module once botocore has been imported, else None: an error cannot come from botocore
    before then."""
    return sys.modules.get("botocore.exceptions")


DEFAULT_RETRY_MODE = "standard"
DEFAULT_MAX_ATTEMPTS = 10

# Environment variables consulted, in order, when an option is not set.
AWS_ENV = {
    "region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
    "profile": ("AWS_PROFILE", "AWS_DEFAULT_PROFILE"),
    "access_key": ("AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY"),
    "secret_key": ("AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY"),
    "session_token": ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"),
    "endpoint_url": ("AWS_ENDPOINT_URL", "AWS_URL"),
    "aws_ca_bundle": ("AWS_CA_BUNDLE",),
}

# The option that says whether TLS certificates are verified is one option for both APIs, as amazon.aws and
# kubernetes.core both name it validate_certs (kubernetes.core's alias verify_ssl included): a module takes both sets.
VALIDATE_CERTS_SPEC = dict(type="bool", aliases=["verify_ssl"])

# Merge into a module's argument spec: dict(AWS_ARGUMENT_SPEC, **own_options).
# Environment fallbacks are applied by aws_connection(), not by the argument spec, so that an option given
# explicitly for one credential kind (profile or keys) is never contradicted by the environment of the other.
# The aliases are amazon.aws's (its modules' common and region documentation fragments, older releases' names
# included), so that options written for amazon.aws modules work unchanged here.
AWS_ARGUMENT_SPEC = dict(
    region=dict(type="str", aliases=["aws_region", "ec2_region"]),
    profile=dict(type="str", aliases=["aws_profile"]),
    access_key=dict(type="str", no_log=False, aliases=["aws_access_key_id", "aws_access_key", "ec2_access_key"]),
    secret_key=dict(type="str", no_log=True, aliases=["aws_secret_access_key", "aws_secret_key", "ec2_secret_key"]),
    session_token=dict(type="str", no_log=True, aliases=["aws_session_token", "security_token", "aws_security_token"]),
    endpoint_url=dict(type="str", aliases=["aws_endpoint_url", "ec2_url"]),
    aws_ca_bundle=dict(type="path"),
    validate_certs=dict(VALIDATE_CERTS_SPEC),
    retry_mode=dict(type="str", choices=list(RETRY_MODES), default=DEFAULT_RETRY_MODE),
    max_attempts=dict(type="int", default=DEFAULT_MAX_ATTEMPTS),
)

_KEY_OPTIONS = ("access_key", "secret_key", "session_token")
_SECRET_OPTIONS = ("secret_key", "session_token")

REGION_REQUIRED_MSG = "region is required: set region, or AWS_REGION / AWS_DEFAULT_REGION"


class AWSConfigurationError(RolloutError):
    """The AWS options cannot be turned into a working session (the message says which option and why)."""


def _is_module(module_or_params):
    return hasattr(module_or_params, "fail_json") and hasattr(module_or_params, "params")


def _params_of(module_or_params):
    if _is_module(module_or_params):
        return module_or_params.params
    return module_or_params or {}


def _module_name_of(module_or_params, module_name):
    if module_name:
        return module_name
    if _is_module(module_or_params):
        return getattr(module_or_params, "_name", None)
    return None


def _unset(value):
    return value is None or value == ""


def _first_env(names, environ):
    for name in names:
        value = environ.get(name)
        if not _unset(value):
            return value, name
    return None, None


def resolve_aws_options(params, environ=None):
    """Resolve the AWS options: option, then environment, then default.

    Returns ``(options, sources)``; ``sources[name]`` is ``"option"``, the environment variable that supplied
    the value, ``"default"`` or ``None`` (unset). Raises AWSConfigurationError for invalid combinations.
    """
    environ = os.environ if environ is None else environ
    params = params or {}
    options = {}
    sources = {}

    for name in AWS_ARGUMENT_SPEC:
        value = params.get(name)
        if not _unset(value):
            options[name], sources[name] = value, "option"
            continue
        value, var = _first_env(AWS_ENV.get(name, ()), environ)
        if var:
            options[name], sources[name] = value, var
        else:
            options[name], sources[name] = None, None

    explicit_profile = sources["profile"] == "option"
    explicit_keys = [k for k in _KEY_OPTIONS if sources[k] == "option"]
    if explicit_profile and explicit_keys:
        raise AWSConfigurationError(
            "profile and %s are mutually exclusive: use a named profile or static keys, not both" % "/".join(explicit_keys))
    if explicit_profile:
        for key in _KEY_OPTIONS:
            options[key], sources[key] = None, None
    elif explicit_keys:
        options["profile"], sources["profile"] = None, None
    elif options["profile"] and any(options[k] for k in _KEY_OPTIONS):
        env_keys = [sources[k] for k in _KEY_OPTIONS if options[k]]
        raise AWSConfigurationError(
            "profile and static keys are mutually exclusive, but the environment sets both (%s and %s): "
            "unset one, or pass profile or access_key/secret_key as options" % (sources["profile"], ", ".join(env_keys)))

    if bool(options["access_key"]) != bool(options["secret_key"]):
        missing = "secret_key" if options["access_key"] else "access_key"
        raise AWSConfigurationError(
            "access_key and secret_key must be given together: %s is missing (option or %s)" % (missing, " / ".join(AWS_ENV[missing])))
    if options["session_token"] and not options["access_key"]:
        raise AWSConfigurationError("session_token needs access_key and secret_key")

    if options["validate_certs"] is None:
        options["validate_certs"], sources["validate_certs"] = True, "default"
    elif not isinstance(options["validate_certs"], bool):
        try:
            options["validate_certs"] = boolean(options["validate_certs"], strict=True)
        except TypeError:
            raise AWSConfigurationError("validate_certs must be a boolean (true/false, yes/no, 1/0), got %r" % (options["validate_certs"],)) from None
    if options["aws_ca_bundle"]:
        options["aws_ca_bundle"] = os.path.expanduser(os.path.expandvars(str(options["aws_ca_bundle"])))

    retry_mode = options["retry_mode"] or DEFAULT_RETRY_MODE
    if retry_mode not in RETRY_MODES:
        raise AWSConfigurationError("retry_mode must be one of %s, got %r" % (", ".join(RETRY_MODES), retry_mode))
    options["retry_mode"] = retry_mode
    sources["retry_mode"] = sources["retry_mode"] or "default"

    max_attempts = options["max_attempts"]
    if max_attempts is None:
        max_attempts, sources["max_attempts"] = DEFAULT_MAX_ATTEMPTS, "default"
    try:
        max_attempts = int(max_attempts)
    except (TypeError, ValueError):
        max_attempts = 0
    if max_attempts < 1:
        raise AWSConfigurationError("max_attempts must be an integer of at least 1, got %r" % (options["max_attempts"],))
    options["max_attempts"] = max_attempts

    return options, sources


# The services the collection's modules call. botocore reads each one's model (JSON; EC2's is several MB) once per
# Loader: one Loader for every connection of a process reads each once, and the worker processes Ansible forks for its
# tasks inherit the models their controller read (warm_models, called by the action plugins on the controller) instead
# of each task reading them again - about 0.4 s of CPU per task that calls EC2 and Auto Scaling.
SERVICES = ("autoscaling", "ec2", "elbv2", "cloudwatch", "ssm")
_SHARED = {}


def shared_loader():
    """The process's one botocore Loader (made on first use)."""
    if "loader" not in _SHARED:
        from botocore.loaders import create_loader  # pylint: disable=import-outside-toplevel
        _SHARED["loader"] = create_loader()
    return _SHARED["loader"]


def _core_session():
    """A new botocore session reading models through the shared Loader."""
    import botocore.session  # pylint: disable=import-outside-toplevel
    core = botocore.session.Session()
    core.register_component("data_loader", shared_loader())
    return core


def warm_models(services=SERVICES):
    """Read the models of ``services`` into the shared Loader by making one client of each; no request is sent. Does
    nothing without boto3, or when the AWS configuration of the environment is unusable (the connection says why)."""
    if not HAS_BOTO3 or _SHARED.get("warm"):
        return
    from botocore.exceptions import BotoCoreError  # pylint: disable=import-outside-toplevel
    core = _core_session()
    try:
        for service in services:
            core.create_client(service, region_name="us-east-1", aws_access_key_id="warm", aws_secret_access_key="warm",
                               endpoint_url="http://127.0.0.1:9")
    except (BotoCoreError, ValueError):
        return
    _SHARED["warm"] = True


def tls_verify(options):
    """botocore's ``verify`` for resolved options: False when validate_certs is false (aws_ca_bundle then unused, as in
    amazon.aws), else the aws_ca_bundle path, else None (botocore's own CA bundle)."""
    if options.get("validate_certs") is False:
        return False
    return options.get("aws_ca_bundle") or None


class AWSConnection:
    """A boto3 Session plus everything needed to make clients that identify the calling module."""

    def __init__(self, params, module_name=None, environ=None):
        if not HAS_BOTO3:
            raise AWSConfigurationError(missing_required_lib("boto3 and botocore"))
        self.options, self.sources = resolve_aws_options(params, environ)
        self.module_name = module_name
        opts = self.options
        import boto3  # pylint: disable=import-outside-toplevel
        from botocore.config import Config  # pylint: disable=import-outside-toplevel
        from botocore.exceptions import ProfileNotFound  # pylint: disable=import-outside-toplevel
        try:
            core = _core_session()
            self.session = boto3.Session(
                botocore_session=core,
                profile_name=opts["profile"],
                aws_access_key_id=opts["access_key"],
                aws_secret_access_key=opts["secret_key"],
                aws_session_token=opts["session_token"],
                region_name=opts["region"],
            )
            # the profile's section, read now so that an unknown profile is named here, not by the first client
            core.get_scoped_config()
        except ProfileNotFound:
            raise AWSConfigurationError(
                "profile %r (from %s) is not defined in the AWS config or credentials files" % (opts["profile"], self._source("profile"))) from None
        # boto3 adds its resource data path to the Loader on every Session: once is enough for the shared one
        loader = shared_loader()
        loader.search_paths[:] = list(dict.fromkeys(loader.search_paths))
        # An unset region may still come from the profile's entry in the AWS config file.
        self.region = opts["region"] or self.session.region_name
        if not self.region:
            raise AWSConfigurationError(REGION_REQUIRED_MSG)
        self.endpoint_url = opts["endpoint_url"] or None
        self.verify = tls_verify(opts)
        if isinstance(self.verify, str) and not os.path.isfile(self.verify):
            raise AWSConfigurationError("aws_ca_bundle: file not found: %s (from %s)" % (self.verify, self._source("aws_ca_bundle")))
        self.config = Config(
            retries={"mode": opts["retry_mode"], "total_max_attempts": opts["max_attempts"]},
            user_agent_extra=user_agent(module_name),
        )

    def _source(self, name):
        source = self.sources.get(name)
        return "option %s" % name if source == "option" else source

    def client(self, service):
        """Return a boto3 client for ``service`` with the retry policy and user agent of this connection."""
        from botocore.exceptions import NoRegionError  # pylint: disable=import-outside-toplevel
        try:
            return self.session.client(service, region_name=self.region, endpoint_url=self.endpoint_url, verify=self.verify,
                                       config=self.config)
        except NoRegionError:
            raise AWSConfigurationError(REGION_REQUIRED_MSG) from None
        except ValueError as exc:
            # botocore rejects a malformed endpoint_url with ValueError("Invalid endpoint: ...").
            raise AWSConfigurationError("endpoint_url %r (from %s) is not usable: %s" % (self.endpoint_url, self._source("endpoint_url"), exc)) from None


def register_aws_secrets(module, options):
    """Add the resolved secret values (including those read from the environment) to the module's no_log values."""
    for name in _SECRET_OPTIONS:
        if options.get(name):
            module.no_log_values.add(options[name])


def aws_connection(module_or_params, module_name=None):
    """Return an AWSConnection for a module (failing it with a clear message on bad options) or a params dict (raising)."""
    name = _module_name_of(module_or_params, module_name)
    if not _is_module(module_or_params):
        return AWSConnection(_params_of(module_or_params), name)
    module = module_or_params
    if not HAS_BOTO3:
        module.fail_json(msg=missing_required_lib("boto3 and botocore"), exception=BOTO3_IMPORT_ERROR)
    try:
        connection = AWSConnection(module.params, name)
    except AWSConfigurationError as exc:
        module.fail_json(msg=str(exc))
    register_aws_secrets(module, connection.options)
    return connection


def aws_client(module_or_params, service, module_name=None):
    """Return a boto3 client for ``service`` built from the shared AWS options.

    ``module_or_params`` is an AnsibleModule (errors fail the module) or a dict of options (errors raise
    AWSConfigurationError). The client retries with botocore's ``retry_mode`` up to ``max_attempts`` attempts in
    total and sends the user agent ``nodeops.rollout/<version> <module-name>``.
    """
    connection = aws_connection(module_or_params, module_name)
    if not _is_module(module_or_params):
        return connection.client(service)
    try:
        return connection.client(service)
    except AWSConfigurationError as exc:
        module_or_params.fail_json(msg=str(exc))


def _one_line(text):
    return " ".join(str(text).split())


def aws_error_parts(exc):
    """Return ``(code, message)`` for an exception raised by boto3/botocore (or anything else)."""
    exceptions = _botocore_exceptions()
    if exceptions and isinstance(exc, exceptions.ClientError):
        error = exc.response.get("Error", {}) or {}
        metadata = exc.response.get("ResponseMetadata", {}) or {}
        code = error.get("Code") or "HTTP %s" % metadata.get("HTTPStatusCode", "error")
        message = error.get("Message") or ""
        retries = metadata.get("RetryAttempts") or 0
        if retries:
            message = "%s (gave up after %d attempts)" % (message, retries + 1) if message else "gave up after %d attempts" % (retries + 1)
        return code, message
    if exceptions and isinstance(exc, exceptions.NoCredentialsError):
        return "NoCredentialsError", (
            "Unable to locate credentials: set access_key and secret_key, or profile, "
            "or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_PROFILE")
    # EndpointConnectionError, ParamValidationError and every other error: botocore's text is already the message.
    return type(exc).__name__, str(exc)


_CREDENTIAL_CODES = ("UnrecognizedClientException", "InvalidClientTokenId", "AuthFailure", "SignatureDoesNotMatch",
                     "ExpiredToken", "ExpiredTokenException", "InvalidAccessKeyId")


def known_regions(service="ec2"):
    """The regions botocore's endpoint data lists for ``service`` (every partition), sorted; [] when it cannot say."""
    try:
        import botocore.session  # pylint: disable=import-outside-toplevel
        session = botocore.session.get_session()
        return sorted(set(region for partition in session.get_available_partitions()
                          for region in session.get_available_regions(service, partition_name=partition)))
    except Exception:  # pylint: disable=broad-except
        return []


def _resolved(params):
    """The connection options as a connection resolves them (the environment included), or None when they are not
    valid (the error is then about them, not the connection)."""
    try:
        return resolve_aws_options(params)[0]
    except AWSConfigurationError:
        return None


def _unreached(params):
    """What an endpoint that cannot be reached is blamed on: ``(option, words)`` - ``endpoint_url`` when one is set (as
    an option or from the environment), ``region`` when botocore does not know the region (a typo: its words list the
    known ones), else ``(None, "")``: the endpoint itself, which the error's text names."""
    options = _resolved(params) or {}
    if options.get("endpoint_url"):
        source = "" if (params or {}).get("endpoint_url") else " (from %s)" % _first_env(AWS_ENV["endpoint_url"], os.environ)[1]
        return "endpoint_url", "%s%s cannot be reached" % (options["endpoint_url"], source)
    region = options.get("region")
    known = known_regions()
    if region and known and region not in known:
        return "region", "%r is not a region botocore knows; use one of %s" % (region, ", ".join(known))
    return None, ""


def connection_option(exc, params):
    """The connection option an error is about, for a message that names what to fix: ``endpoint_url`` (set as an
    option or in the environment) or ``region`` (one botocore does not know) when the endpoint cannot be reached,
    ``access_key`` (or ``profile``) when the credentials are refused; None for any other error (an endpoint of a known
    region that cannot be reached: the error names it), or without ``params``."""
    exceptions = _botocore_exceptions()
    if params is None or exceptions is None:
        return None
    if isinstance(exc, exceptions.ConnectionError):
        return _unreached(params)[0]
    if isinstance(exc, exceptions.NoCredentialsError) or aws_error_parts(exc)[0] in _CREDENTIAL_CODES:
        return "profile" if params.get("profile") else "access_key"
    return None


def _not_aws(exc):
    """An HTTP error whose body is no AWS error (an HTML page of a proxy or a load balancer): botocore then gives the
    status as the code and its reason as the message. Returns the status, or None."""
    exceptions = _botocore_exceptions()
    if not (exceptions and isinstance(exc, exceptions.ClientError)):
        return None
    status = (exc.response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
    code = str((exc.response.get("Error") or {}).get("Code") or "")
    return status if status and code in ("", str(status)) else None


def endpoint_of(params):
    """The endpoint requests go to, in words: the endpoint_url resolved, else AWS's endpoint of the region."""
    options = _resolved(params) or {}
    if options.get("endpoint_url"):
        return options["endpoint_url"]
    return "AWS's endpoint of region %s" % options["region"] if options.get("region") else "AWS's endpoint"


def describe_aws_error(exc, operation, resource=None, params=None):
    """One line naming the operation, the resource, AWS's error code and message.

    With the module's ``params``, an error about the connection itself begins with the option to fix
    (``endpoint_url: DescribeAutoScalingGroups on ...: EndpointConnectionError: ...``), as errors about options do.

    ``describe_aws_error(exc, "SetDesiredCapacity", "Auto Scaling group 'web'")`` gives
    "SetDesiredCapacity on Auto Scaling group 'web': ValidationError: New SetDesiredCapacity value 99 is above max value 3 ...".
    """
    code, message = aws_error_parts(exc)
    where = "%s on %s" % (operation, resource) if resource else str(operation)
    status = _not_aws(exc)
    if status is not None:
        # no AWS error came back: say who answered, and with what
        message = "%s answered HTTP %s%s with no AWS error in it (a proxy or a server in front of AWS?)" % (
            endpoint_of(params) if params is not None else "the endpoint", status, " (%s)" % message if message else "")
        code = "HTTP %s" % status
    text = "%s: %s: %s" % (where, code, message) if message else "%s: %s" % (where, code)
    option = connection_option(exc, params)
    if option is not None and _botocore_exceptions() and isinstance(exc, _botocore_exceptions().ConnectionError):
        return _one_line("%s: %s: %s" % (option, _unreached(params)[1], text))
    return _one_line("%s: %s" % (option, text) if option else text)
