"""Errors that become Kubernetes ``Status`` bodies with the real reasons and codes."""


class ApiError(Exception):
    """An API failure: ``code`` (HTTP status), ``reason`` (metav1.StatusReason), a message and details."""

    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self):
        body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}
        if self.details is not None:
            body["details"] = self.details
        return body


def not_found(kind_plural, name, group=""):
    resource = kind_plural if not group else "%s.%s" % (kind_plural, group)
    return ApiError(404, "NotFound", '%s "%s" not found' % (resource, name),
                    {"name": name, "group": group, "kind": kind_plural})


def already_exists(kind_plural, name, group=""):
    resource = kind_plural if not group else "%s.%s" % (kind_plural, group)
    return ApiError(409, "AlreadyExists", '%s "%s" already exists' % (resource, name),
                    {"name": name, "group": group, "kind": kind_plural})


def conflict(kind_plural, name, group="", why=None):
    """409 Conflict; ``why`` replaces the usual stale-resourceVersion explanation (e.g. a failed precondition)."""
    resource = kind_plural if not group else "%s.%s" % (kind_plural, group)
    why = why or ("the object has been modified; please apply your changes to the latest version and try again")
    return ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s' % (resource, name, why),
                    {"name": name, "group": group, "kind": kind_plural})


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def unauthorized():
    """401, as kube-apiserver answers a request whose credentials no authenticator accepts (it says no more than this)."""
    return ApiError(401, "Unauthorized", "Unauthorized")


def method_not_allowed():
    return ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")


# What the embedded backend says where kube-apiserver would authorize with RBAC: it has no authorizer.
NO_RBAC = ("the sandbox's embedded Kubernetes backend has no RBAC: it stores no Role or binding and allows "
           "every request; RBAC is enforced on the reference backend only (python -m sandbox up --kube reference --rbac "
           "applies docs/rbac.yaml and connects the collection with a token those roles bind)")


def rbac_not_served(method="GET"):
    """A request to an RBAC resource: a read finds nothing (404), a write is not allowed (405); both say why."""
    if method == "GET":
        return ApiError(404, "NotFound", NO_RBAC, {})
    return ApiError(405, "MethodNotAllowed", NO_RBAC, {})


def route_not_found():
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def unsupported_media_type(accepted):
    return ApiError(415, "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types include: "
                    + ", ".join(accepted), {})


def too_many_requests(message="Too many requests, please try again later.", retry_after=1):
    details = {"retryAfterSeconds": retry_after} if retry_after else {}
    return ApiError(429, "TooManyRequests", message, details)


def internal_error(message):
    return ApiError(500, "InternalError", "Internal error occurred: %s" % message, {"causes": [{"message": message}]})


def service_unavailable(message="the server is currently unable to handle the request"):
    return ApiError(503, "ServiceUnavailable", message, {})


def expired(message):
    return ApiError(410, "Expired", message)


_CAUSE_REASONS = (("Required value", "FieldValueRequired"), ("Invalid value", "FieldValueInvalid"),
                  ("Unsupported value", "FieldValueNotSupported"), ("Duplicate value", "FieldValueDuplicate"),
                  ("Forbidden", "FieldValueForbidden"), ("Too long", "FieldValueTooLong"),
                  ("Too many", "FieldValueTooMany"), ("Not found", "FieldValueNotFound"))


def _cause_reason(message):
    for prefix, reason in _CAUSE_REASONS:
        if message.startswith(prefix):
            return reason
    return "FieldValueInvalid"


def invalid(kind, name, causes, group=""):
    """422 Invalid; ``causes`` is a list of (field, message) in field.Error wording ("Required value", ...).

    The message and the causes' reasons follow apimachinery's NewInvalid: ``Kind.group "name" is invalid:``
    then the one error, or all of them in brackets; an error repeated word for word is written once (the
    aggregate de-duplicates its messages), while every cause stays in ``details.causes``."""
    texts = list(dict.fromkeys("%s: %s" % c for c in causes))
    text = texts[0] if len(texts) == 1 else "[%s]" % ", ".join(texts)
    qualified = kind if not group else "%s.%s" % (kind, group)
    details = {"name": name, "kind": kind,
               "causes": [{"reason": _cause_reason(m), "message": m, "field": f} for f, m in causes]}
    if group:
        details["group"] = group
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (qualified, name or "", text), details)
