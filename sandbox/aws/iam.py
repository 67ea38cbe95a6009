"""AWS IAM enforced on the collection (``up --iam``), by moto's own authorizer.

moto authenticates and authorizes a request against the IAM policies of the user whose access key signed it once its
``INITIAL_NO_AUTH_ACTION_COUNT`` is reached. The sandbox turns that on for the keys of one IAM user only - the
collection's, ``nodeops-rollout``, created with the policy of ``docs/iam-policy.json`` - so that its own clients (the
controllers, the tests' observer, ``SandboxHandle.aws()``) keep the unauthenticated access they have without it.

What moto evaluates of a policy (moto 5.2, ``moto/iam/access_control.py``): the ``Action`` of each statement, its
``Effect``; not its ``Resource`` (every request is checked against ``*``, which an ARN pattern never matches) nor its
``Condition`` (moto collects no condition key of a request, so a statement with one never applies). The policy given to
moto is the document with each ``Resource`` made ``*`` and each ``Condition`` left out, and without the statements only
AWS's own checks use (:func:`evaluated_policy`); what moto cannot check is said in docs/iam.md and kept in the document.

moto also differs from AWS in what :func:`install` corrects for the enforced keys: it checks the signature of a GET
(EKS's DescribeCluster) over the wrong payload, names CloudWatch's actions ``monitoring:`` (its signing name) and not
``cloudwatch:``, and answers a refusal in XML whatever the protocol (a CloudWatch or EKS client could not read it).
"""

import copy
import json
import os
import re
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS_POLICY = os.path.join(ROOT, "docs", "iam-policy.json")
USER = "nodeops-rollout"
POLICY_NAME = "nodeops-rollout"
_CREDENTIAL = re.compile(r"Credential=([A-Z0-9]+)/")
_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/[^/]+/([^/]+)/aws4_request")
_ENFORCED = set()          # access key ids whose requests moto authorizes
_LOCK = threading.Lock()
_INSTALLED = []


# Condition keys AWS sets only on the checks it makes itself when a group is pointed at a launch template (RunInstances
# from the template, the tags it applies at launch, the role it passes to EC2), never on a request the collection sends
IMPLICIT_CHECK_KEYS = frozenset(["ec2:LaunchTemplate", "ec2:CreateAction", "iam:PassedToService"])


def implicit_check(statement):
    """Whether a statement of the policy allows only what AWS checks itself (a condition on IMPLICIT_CHECK_KEYS)."""
    return any(key in IMPLICIT_CHECK_KEYS for block in (statement.get("Condition") or {}).values() for key in block)


def evaluated_policy(document):
    """``document`` (a policy dict) as moto can evaluate it: each statement's ``Resource`` ``*``, no ``Condition``, and
    without the statements AWS evaluates only in its own checks (:func:`implicit_check`): without their conditions
    they would allow the collection's own requests of the same action (``ec2:CreateTags`` on any resource), which AWS
    never lets them do."""
    out = copy.deepcopy(document)
    out["Statement"] = [statement for statement in out.get("Statement") or [] if not implicit_check(statement)]
    for statement in out["Statement"]:
        statement.pop("Condition", None)
        if "Resource" in statement:
            statement["Resource"] = "*"
    return out


def access_key_of(headers):
    """The access key id that signed a request (its SigV4 ``Authorization`` header), or None."""
    match = _CREDENTIAL.search(headers.get("Authorization") or "")
    return match.group(1) if match else None


def install():
    """Make moto authorize the requests signed by an enforced key, and only those (idempotent)."""
    # pylint: disable=import-outside-toplevel
    from moto import settings
    from moto.core.authorization import ActionAuthenticatorMixin
    from werkzeug.exceptions import HTTPException
    with _LOCK:
        if _INSTALLED:
            return
        original = ActionAuthenticatorMixin._authenticate_and_authorize_action   # pylint: disable=protected-access

        def authorize_enforced(self, iam_request_cls, resource="*"):
            if access_key_of(self.headers) not in _ENFORCED:
                return None
            try:
                return original(self, _as_aws_checks(iam_request_cls), resource)
            except HTTPException as refused:
                raise _in_the_protocol(self, refused) from None

        ActionAuthenticatorMixin._authenticate_and_authorize_action = authorize_enforced   # pylint: disable=protected-access
        settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
        _INSTALLED.append(original)


# IAM action prefixes that differ from the service's signing name, which moto takes for the prefix
ACTION_PREFIXES = {"monitoring": "cloudwatch"}


def _as_aws_checks(iam_request_cls):
    """``iam_request_cls`` checking a request as AWS does where moto does not:

    - the signature of a GET, HEAD or DELETE is over an empty payload (moto signs the request's parsed data in its
      place - for a GET of a REST-JSON service, such as EKS's DescribeCluster, its headers - so that no such request
      would match); a query-protocol request, a POST, is left as moto signs it (its parameters are its form body);
    - the action is named with its IAM prefix (``cloudwatch:DescribeAlarms``), not the signing name (``monitoring``)."""
    class Request(iam_request_cls):   # pylint: disable=too-few-public-methods
        def __init__(self, **kwargs):
            if kwargs.get("method") in ("GET", "HEAD", "DELETE") and not kwargs.get("body"):
                kwargs["data"] = b""
            super().__init__(**kwargs)
            prefix, name = self._action.split(":", 1)
            self._action = "%s:%s" % (ACTION_PREFIXES.get(prefix, prefix), name)
    return Request


def _in_the_protocol(response, refused):
    """moto's refusal ``refused`` (an XML error, whatever the protocol) answered in the protocol of the request, as AWS
    answers an AccessDenied of a JSON, REST-JSON or CBOR service (``AccessDeniedException`` for JSON), so that the
    client reads its code and message."""
    # pylint: disable=import-outside-toplevel
    from moto.core.exceptions import ServiceException
    from moto.core.responses import ActionResult, get_service_model
    from werkzeug.exceptions import HTTPException
    from .sandbox import service_of
    scope = _SCOPE.search(response.headers.get("Authorization") or "")
    if not scope or not getattr(refused, "error_type", None):
        return refused
    # moto names the service only once the request is dispatched: name it from the request's signature
    response.service_name = service_of(scope.group(1))
    protocol = response.determine_response_protocol(get_service_model(response.boto3_service_name))
    if protocol in ("query", "ec2"):
        return refused
    code = refused.error_type + ("Exception" if protocol in ("json", "rest-json") and refused.code == 403 else "")

    class AccessRefused(ServiceException):   # of this module, so that moto looks its code up in no service's model
        pass
    status, _headers, body = response.serialized(ActionResult(AccessRefused(code, refused.message)))

    class Refused(HTTPException):
        description = body
    Refused.code = refused.code or status
    return Refused()


def create_user(iam, policy_document, user=USER):
    """Create IAM user ``user`` with ``policy_document`` (inline, as moto evaluates it) and an access key, enforced from
    now on; returns ``(access_key_id, secret_access_key)``. ``iam`` is a boto3 IAM client of the sandbox."""
    iam.create_user(UserName=user)
    put_policy(iam, policy_document, user)
    key = iam.create_access_key(UserName=user)["AccessKey"]
    with _LOCK:
        _ENFORCED.add(key["AccessKeyId"])
    return key["AccessKeyId"], key["SecretAccessKey"]


def put_policy(iam, policy_document, user=USER):
    """Replace the user's policy with ``policy_document`` as moto evaluates it (a statement left out is refused)."""
    iam.put_user_policy(UserName=user, PolicyName=POLICY_NAME, PolicyDocument=json.dumps(evaluated_policy(policy_document)))


def docs_policy():
    with open(DOCS_POLICY, encoding="utf-8") as fh:
        return json.load(fh)
