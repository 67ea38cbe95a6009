"""The real Alertmanager, for the alert gates (``up --alertmanager``): built from its Go module into the user's cache on
first use (``reference.build``, set ``alertmanager``), started on 127.0.0.1 with one receiver that sends nowhere, its
clustering off and its data in the state directory. Tests post alerts and silences through its API v2, as Prometheus
and an operator do (``drive.handle.SandboxHandle.post_alert``, ``silence``)."""

import os
import subprocess
import time
import urllib.error
import urllib.request

from .reference.control_plane import _free_port

# a route to a receiver without integrations: alerts are kept, grouped and silenced as usual, and notify no one
CONFIG = """route:
  receiver: nowhere
  group_wait: 1s
  group_interval: 1s
receivers:
  - name: nowhere
"""


class AlertmanagerError(RuntimeError):
    pass


class Alertmanager:
    def __init__(self, state_dir):
        self.dir = os.path.join(state_dir, "alertmanager")
        self.proc = None
        self.log = None
        self.url = None

    def start(self, timeout=60.0):
        from .reference.build import ensure  # pylint: disable=import-outside-toplevel
        binary = os.path.join(ensure(which="alertmanager"), "alertmanager")
        os.makedirs(os.path.join(self.dir, "data"), exist_ok=True)
        config = os.path.join(self.dir, "alertmanager.yml")
        with open(config, "w", encoding="utf-8") as fh:
            fh.write(CONFIG)
        port = _free_port()
        self.url = "http://127.0.0.1:%d" % port
        self.log = open(os.path.join(self.dir, "alertmanager.log"), "w", encoding="utf-8")  # pylint: disable=consider-using-with
        self.proc = subprocess.Popen(  # pylint: disable=consider-using-with
            [binary, "--config.file=" + config, "--storage.path=" + os.path.join(self.dir, "data"),
             "--web.listen-address=127.0.0.1:%d" % port, "--cluster.listen-address=", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AlertmanagerError("alertmanager exited with %s; see %s" % (self.proc.returncode, self.log.name))
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as resp:  # nosec - loopback
                    if resp.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise AlertmanagerError("alertmanager did not answer %s/-/ready within %.0fs" % (self.url, timeout))

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.log is not None:
            self.log.close()
