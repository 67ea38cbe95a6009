"""A real service of the sandbox's own, as a process on 127.0.0.1 (Alertmanager, the Pushgateway): started on a free
port with its log in the state directory, ready once its ``/-/ready`` answers 200, stopped with the sandbox."""

import os
import subprocess
import time
import urllib.error
import urllib.request

from .reference.control_plane import _free_port


class ServiceError(RuntimeError):
    pass


class LoopbackService:
    name = "service"

    def __init__(self, state_dir):
        self.dir = os.path.join(state_dir, self.name)
        self.proc = None
        self.log = None
        self.url = None

    def run(self, argv_for_port, timeout=60.0):
        """Start ``argv_for_port(port)`` on a free port and wait until it is ready; returns self."""
        os.makedirs(self.dir, exist_ok=True)
        port = _free_port()
        self.url = "http://127.0.0.1:%d" % port
        self.log = open(os.path.join(self.dir, self.name + ".log"), "w", encoding="utf-8")  # pylint: disable=consider-using-with
        self.proc = subprocess.Popen(argv_for_port(port), stdout=self.log, stderr=subprocess.STDOUT,  # pylint: disable=consider-using-with
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServiceError("%s exited with %s; see %s" % (self.name, self.proc.returncode, self.log.name))
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as resp:  # nosec - loopback
                    if resp.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise ServiceError("%s did not answer %s/-/ready within %.0fs" % (self.name, self.url, timeout))

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
