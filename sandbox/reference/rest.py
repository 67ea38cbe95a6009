"""The few Kubernetes API calls the reference backend's own parts make (the bridge, the observer, start-up
checks), as plain JSON over HTTPS with a bearer token and a User-Agent of their own."""

import json
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request


class RestError(RuntimeError):
    def __init__(self, code, message):
        super().__init__("%s: %s" % (code, message))
        self.code = code


class Rest:
    def __init__(self, url, token, ca_file, user_agent):
        self.url = url.rstrip("/")
        self.token = token
        self.user_agent = user_agent
        self.context = ssl.create_default_context(cafile=ca_file)

    def _request(self, method, path, body=None, params=None, content_type="application/json"):
        url = self.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        data = None if body is None else json.dumps(body).encode()
        return urllib.request.Request(url, data=data, method=method, headers={
            "Authorization": "Bearer " + self.token, "User-Agent": self.user_agent, "Accept": "application/json",
            "Content-Type": content_type})

    def _open(self, method, path, body=None, params=None, content_type="application/json", timeout=30.0):
        req = self._request(method, path, body, params, content_type)
        try:
            return urllib.request.urlopen(req, timeout=timeout, context=self.context)  # nosec - loopback API server
        except urllib.error.HTTPError as exc:
            try:
                message = json.loads(exc.read() or b"{}").get("message") or exc.reason
            except ValueError:
                message = exc.reason
            raise RestError(exc.code, message) from None
        except (urllib.error.URLError, OSError) as exc:
            raise RestError(0, str(exc)) from None

    def request(self, method, path, body=None, params=None, content_type="application/json", timeout=30.0):
        with self._open(method, path, body, params, content_type, timeout) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else {}

    def call(self, method, path, body=None, params=None, content_type="application/json"):
        """(status code, parsed body) whatever the code: what a client observes, for comparing two servers."""
        req = self._request(method, path, body, params, content_type)
        try:
            with urllib.request.urlopen(req, timeout=30, context=self.context) as resp:  # nosec - loopback API server
                code, raw = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            code, raw = exc.code, exc.read()
        try:
            return code, json.loads(raw) if raw else {}
        except ValueError:
            return code, {"raw": raw.decode("utf-8", "replace")[:200]}

    def get(self, path, **params):
        return self.request("GET", path, params=params or None)

    def healthy(self):
        try:
            with self._open("GET", "/readyz", timeout=2.0) as resp:
                return resp.status == 200
        except RestError:
            return False

    def watch(self, path, resource_version, timeout_seconds=60):
        """Yield (type, object) from a watch until the server ends it; a 410 comes as RestError(410)."""
        params = {"watch": "1", "resourceVersion": resource_version, "allowWatchBookmarks": "true",
                  "timeoutSeconds": str(timeout_seconds)}
        try:
            with self._open("GET", path, params=params, timeout=timeout_seconds + 15) as resp:
                for line in resp:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    if event.get("type") == "ERROR":
                        status = event.get("object") or {}
                        raise RestError(status.get("code") or 500, status.get("message") or "watch error")
                    yield event["type"], event["object"]
        except (socket.timeout, TimeoutError, ConnectionError, ssl.SSLError) as exc:
            raise RestError(0, str(exc)) from None
