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


def conflict(kind_plural, name, group=""):
    resource = kind_plural if not group else "%s.%s" % (kind_plural, group)
    return ApiError(409, "Conflict",
                    'Operation cannot be fulfilled on %s "%s": the object has been modified; '
                    "please apply your changes to the latest version and try again" % (resource, name),
                    {"name": name, "group": group, "kind": kind_plural})


def invalid(kind, name, causes):
    """422 Invalid; ``causes`` is a list of (field, message)."""
    text = "; ".join("%s: %s" % c for c in causes)
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (kind, name or "", text),
                    {"name": name, "kind": kind,
                     "causes": [{"reason": "FieldValueInvalid", "message": m, "field": f} for f, m in causes]})
