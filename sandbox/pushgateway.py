"""The real Pushgateway, for the run's metrics (``up --pushgateway``), started on 127.0.0.1 without persistence.

Its Go module cannot be built here: the module proxy answers ``403 Forbidden ... This module version is not available``
for ``github.com/prometheus/pushgateway``. So the sandbox takes Debian's build of it, the package
``prometheus-pushgateway``, fetched once with ``apt-get download`` (no install, no root needed), checked against its
pinned SHA-256, and unpacked into the user's cache beside the reference control plane (``reference.build.cache_root``).
Tests read what was pushed back from its ``/metrics``, as Prometheus scrapes it."""

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile

from .loopback import LoopbackService
from .reference.build import cache_root

PACKAGE = "prometheus-pushgateway"
VERSION = "1.5.1-2+b5"
SHA256 = "f779c46f571ea0c341630e4b36c1d608d46bb08c5658de99966c5c2e49486b9d"


class PushgatewayError(RuntimeError):
    pass


def binary_path():
    return os.path.join(cache_root(), "pushgateway-%s" % VERSION.replace("+", "_"), "bin", "pushgateway")


def _download(work):
    return subprocess.run(["apt-get", "download", "%s=%s" % (PACKAGE, VERSION)], cwd=work, capture_output=True, text=True, check=False)


def ensure():
    """The Pushgateway's binary, fetched and unpacked first when it is not in the cache yet."""
    target = binary_path()
    if os.access(target, os.X_OK):
        return target
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(os.path.join(cache_root(), ".build-pushgateway.lock"), "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.access(target, os.X_OK):
            return target
        for tool in ("apt-get", "dpkg-deb"):
            if not shutil.which(tool):
                raise PushgatewayError("the sandbox's Pushgateway is Debian's package %s, and no '%s' is on PATH" % (PACKAGE, tool))
        with tempfile.TemporaryDirectory() as work:
            proc = _download(work)
            if proc.returncode != 0 and os.geteuid() == 0:
                # a fresh machine whose package lists were never read: read them once (as root only), and try again
                subprocess.run(["apt-get", "update", "-qq"], capture_output=True, check=False)
                proc = _download(work)
            debs = [name for name in os.listdir(work) if name.endswith(".deb")]
            if proc.returncode != 0 or len(debs) != 1:
                raise PushgatewayError("apt-get download %s=%s failed: %s" % (PACKAGE, VERSION, (proc.stdout + proc.stderr)[-2000:]))
            deb = os.path.join(work, debs[0])
            with open(deb, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            if digest != SHA256:
                raise PushgatewayError("%s has SHA-256 %s, not the pinned %s" % (debs[0], digest, SHA256))
            subprocess.run(["dpkg-deb", "-x", deb, os.path.join(work, "root")], check=True, capture_output=True)
            partial = target + ".partial"
            shutil.copy2(os.path.join(work, "root", "usr", "bin", PACKAGE), partial)
            os.replace(partial, target)
    return target


class Pushgateway(LoopbackService):
    name = "pushgateway"

    def start(self, timeout=60.0):
        binary = ensure()
        return self.run(lambda port: [binary, "--web.listen-address=127.0.0.1:%d" % port, "--persistence.file=", "--log.level=warn"],
                        timeout)
