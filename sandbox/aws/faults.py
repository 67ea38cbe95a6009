"""Runtime fault injection for the sandbox's AWS endpoint.

Faults are chosen per request by action name ("SetDesiredCapacity", "DescribeAutoScalingGroups", ...,
or "*" for every action) with a rate between 0 and 1, drawn from one seeded ``random.Random`` so a run
is reproducible. Error bodies use each protocol's real shape, so botocore parses and retries them as it
does against AWS:

* throttling: Auto Scaling (query) ``Throttling`` HTTP 400; EC2 ``RequestLimitExceeded`` HTTP 503;
  JSON services (SSM) ``ThrottlingException`` HTTP 400.
* internal_error: ``InternalFailure`` HTTP 500 (EC2: ``InternalError``).
* unavailable: ``ServiceUnavailable`` HTTP 503 (EC2: ``Unavailable``).

``insufficient_capacity_azs`` makes launches into those Availability Zones fail (see fidelity.py).
"""

import json
import random
import threading
import uuid

KINDS = ("throttling", "internal_error", "unavailable")

_QUERY_ERRORS = {
    "throttling": (400, "Sender", "Throttling", "Rate exceeded"),
    "internal_error": (500, "Receiver", "InternalFailure", "The request processing has failed because of an unknown error, exception or failure."),
    "unavailable": (503, "Receiver", "ServiceUnavailable", "The request has failed due to a temporary failure of the server."),
}
_EC2_ERRORS = {
    "throttling": (503, "RequestLimitExceeded", "Request limit exceeded."),
    "internal_error": (500, "InternalError", "An internal error has occurred."),
    "unavailable": (503, "Unavailable", "The server is overloaded and can't handle the request."),
}
_JSON_ERRORS = {
    "throttling": (400, "ThrottlingException", "Rate exceeded"),
    "internal_error": (500, "InternalFailure", "The request processing has failed because of an unknown error, exception or failure."),
    "unavailable": (503, "ServiceUnavailable", "The request has failed due to a temporary failure of the server."),
}
_REASONS = {400: "Bad Request", 500: "Internal Server Error", 503: "Service Unavailable"}


def _rates(field, value):
    """Normalise a rate setting: a number (every action) or a mapping action -> rate."""
    if value is None:
        return {}
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = {"*": value}
    if not isinstance(value, dict):
        raise ValueError("%s must be a rate between 0 and 1 or a mapping of action name (or '*') to such a rate, got %r" % (field, value))
    out = {}
    for action, rate in value.items():
        if not isinstance(action, str) or not action:
            raise ValueError("%s: action names must be non-empty strings such as 'SetDesiredCapacity' or '*', got %r" % (field, action))
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0.0 <= rate <= 1.0:
            raise ValueError("%s[%r] must be a number between 0 and 1, got %r" % (field, action, rate))
        out[action] = float(rate)
    return out


class Faults:
    """Thread-safe fault settings, changeable while the sandbox runs."""

    def __init__(self, seed=0):
        self._lock = threading.Lock()
        self._random = random.Random(seed)
        self._rates = {kind: {} for kind in KINDS}
        self._short_azs = frozenset()

    def set(self, throttling=None, internal_error=None, unavailable=None, insufficient_capacity_azs=None, seed=None):
        """Change the given settings; settings not passed are left as they are.

        ``throttling``, ``internal_error`` and ``unavailable`` take a rate for every action (``0.2``) or a
        mapping ``{"SetDesiredCapacity": 1.0, "*": 0.05}`` (an action's own entry wins over ``"*"``);
        ``{}`` clears that kind. ``insufficient_capacity_azs`` takes a list of AZ names (``[]`` clears).
        ``seed`` re-seeds the random draws.
        """
        updates = {}
        for kind, value in (("throttling", throttling), ("internal_error", internal_error), ("unavailable", unavailable)):
            if value is not None:
                updates[kind] = _rates(kind, value)
        short = None
        if insufficient_capacity_azs is not None:
            if isinstance(insufficient_capacity_azs, str) or not all(isinstance(a, str) and a for a in insufficient_capacity_azs):
                raise ValueError("insufficient_capacity_azs must be a list of Availability Zone names such as ['us-east-1b'], got %r"
                                 % (insufficient_capacity_azs,))
            short = frozenset(insufficient_capacity_azs)
        with self._lock:
            self._rates.update(updates)
            if short is not None:
                self._short_azs = short
            if seed is not None:
                self._random.seed(seed)

    def clear(self):
        """Remove every fault."""
        with self._lock:
            self._rates = {kind: {} for kind in KINDS}
            self._short_azs = frozenset()

    def insufficient_capacity_azs(self):
        with self._lock:
            return self._short_azs

    def snapshot(self):
        with self._lock:
            return {"throttling": dict(self._rates["throttling"]), "internal_error": dict(self._rates["internal_error"]),
                    "unavailable": dict(self._rates["unavailable"]), "insufficient_capacity_azs": sorted(self._short_azs)}

    def draw(self, action):
        """The fault kind to inject for one request of ``action``, or None."""
        with self._lock:
            for kind in KINDS:
                rates = self._rates[kind]
                rate = rates.get(action, rates.get("*", 0.0)) if action else rates.get("*", 0.0)
                if rate > 0.0 and (rate >= 1.0 or self._random.random() < rate):
                    return kind
        return None


def render(kind, service, json_protocol):
    """(status line, headers, body bytes) of the error response for fault ``kind``."""
    request_id = str(uuid.uuid4())
    if service == "ec2":
        status, code, message = _EC2_ERRORS[kind]
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>%s</Code><Message>%s</Message>'
                '</Error></Errors><RequestID>%s</RequestID></Response>' % (code, message, request_id))
        content_type = "text/xml"
    elif json_protocol:
        status, code, message = _JSON_ERRORS[kind]
        body = json.dumps({"__type": code, "message": message})
        content_type = "application/x-amz-json-1.1"
    else:
        status, fault_type, code, message = _QUERY_ERRORS[kind]
        body = ('<ErrorResponse xmlns="https://%s.amazonaws.com/doc/"><Error><Type>%s</Type><Code>%s</Code><Message>%s</Message>'
                '</Error><RequestId>%s</RequestId></ErrorResponse>' % (service or "aws", fault_type, code, message, request_id))
        content_type = "text/xml"
    payload = body.encode("utf-8")
    headers = [("Content-Type", content_type), ("Content-Length", str(len(payload))), ("x-amzn-RequestId", request_id)]
    return "%d %s" % (status, _REASONS[status]), headers, payload
