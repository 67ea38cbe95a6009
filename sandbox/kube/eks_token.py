"""EKS bearer tokens as the embedded API server reads them: ``k8s-aws-v1.`` and the base64url of a presigned STS
``GetCallerIdentity`` URL (what ``aws eks get-token`` and the collection's ``eks_cluster`` send).

EKS hands the URL to STS, which checks its signature, and maps the caller to a Kubernetes user. The embedded server,
which authorizes nothing, checks what it can without the secret key - the shape AWS IAM Authenticator requires of the
URL: the STS action, SigV4 in the query, the cluster header signed, at most 60 s to live, signed within 15 minutes -
and records the access key that signed it, so that a test can say which identity connected.
"""

import base64
import calendar
import time
from urllib.parse import parse_qs, urlsplit

PREFIX = "k8s-aws-v1."
CLUSTER_HEADER = "x-k8s-aws-id"
MAX_EXPIRES = 60            # seconds a presigned URL may say it lives
VALID_FOR = 15 * 60         # seconds a token is accepted after it was signed


def access_key(authorization, now=None):
    """The access key id that signed the EKS token of an ``Authorization`` header; None for any other header. A token
    with the EKS prefix that is not a presigned GetCallerIdentity URL signed for a cluster raises ValueError, naming why."""
    scheme, token = ((authorization or "").split(" ", 1) + [""])[:2]
    if scheme.lower() != "bearer" or not token.startswith(PREFIX):
        return None
    encoded = token[len(PREFIX):]
    try:
        url = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        raise ValueError("the EKS token is not base64url of a URL") from None
    query = {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}
    if query.get("Action") != "GetCallerIdentity" or query.get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256":
        raise ValueError("the EKS token is not a presigned STS GetCallerIdentity URL (SigV4)")
    if CLUSTER_HEADER not in (query.get("X-Amz-SignedHeaders") or "").split(";"):
        raise ValueError("the EKS token's URL does not sign the %s header (the cluster it is for)" % CLUSTER_HEADER)
    try:
        expires = int(query.get("X-Amz-Expires", ""))
        signed = calendar.timegm(time.strptime(query.get("X-Amz-Date", ""), "%Y%m%dT%H%M%SZ"))
    except ValueError:
        raise ValueError("the EKS token's URL has no valid X-Amz-Expires and X-Amz-Date") from None
    if expires > MAX_EXPIRES:
        raise ValueError("the EKS token's URL lives %d s, more than %d s" % (expires, MAX_EXPIRES))
    now = time.time() if now is None else now
    if not signed - 60 <= now <= signed + VALID_FOR:
        raise ValueError("the EKS token was signed at %s, not within the last %d minutes" % (query["X-Amz-Date"], VALID_FOR // 60))
    key, scope = ((query.get("X-Amz-Credential") or "").split("/", 1) + [""])[:2]
    if not key or not scope.endswith("/sts/aws4_request"):
        raise ValueError("the EKS token's URL is not signed for STS")
    return key
