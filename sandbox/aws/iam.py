"""AWS IAM enforced on the collection (``up --iam``), by moto's own authorizer.

moto authenticates and authorizes a request against the IAM policies of the user whose access key signed it once its
``INITIAL_NO_AUTH_ACTION_COUNT`` is reached. The sandbox turns that on for the keys of one IAM user only - the
collection's, ``nodeops-rollout``, created with the policy of ``docs/iam-policy.json`` - so that its own clients (the
controllers, the tests' observer, ``SandboxHandle.aws()``) keep the unauthenticated access they have without it.

What moto evaluates of a policy (moto 5.2, ``moto/iam/access_control.py``): the ``Action`` of each statement, its
``Effect``; not its ``Resource`` (every request is checked against ``*``, which an ARN pattern never matches) nor its
``Condition`` (moto collects no condition key of a request, so a statement with one never applies). The policy given to
moto is the document with each ``Resource`` made ``*`` and each ``Condition`` left out (:func:`evaluated_policy`); what
moto cannot check is said in docs/iam.md and kept in the document.
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
_ENFORCED = set()          # access key ids whose requests moto authorizes
_LOCK = threading.Lock()
_INSTALLED = []


def evaluated_policy(document):
    """``document`` (a policy dict) as moto can evaluate it: each statement's ``Resource`` ``*``, no ``Condition``."""
    out = copy.deepcopy(document)
    for statement in out.get("Statement") or []:
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
    with _LOCK:
        if _INSTALLED:
            return
        original = ActionAuthenticatorMixin._authenticate_and_authorize_action   # pylint: disable=protected-access

        def authorize_enforced(self, iam_request_cls, resource="*"):
            if access_key_of(self.headers) not in _ENFORCED:
                return None
            return original(self, iam_request_cls, resource)

        ActionAuthenticatorMixin._authenticate_and_authorize_action = authorize_enforced   # pylint: disable=protected-access
        settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
        _INSTALLED.append(original)


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
