"""The real Alertmanager, for the alert gates (``up --alertmanager``): built from its Go module into the user's cache on
first use (``reference.build``, set ``alertmanager``), started on 127.0.0.1 with one receiver that sends nowhere, its
clustering off and its data in the state directory. Tests post alerts and silences through its API v2, as Prometheus
and an operator do (``drive.handle.SandboxHandle.post_alert``, ``silence``)."""

import os

from .loopback import LoopbackService

# a route to a receiver without integrations: alerts are kept, grouped and silenced as usual, and notify no one
CONFIG = """route:
  receiver: nowhere
  group_wait: 1s
  group_interval: 1s
receivers:
  - name: nowhere
"""


class Alertmanager(LoopbackService):
    name = "alertmanager"

    def start(self, timeout=60.0):
        from .reference.build import ensure  # pylint: disable=import-outside-toplevel
        binary = os.path.join(ensure(which="alertmanager"), "alertmanager")
        os.makedirs(os.path.join(self.dir, "data"), exist_ok=True)
        config = os.path.join(self.dir, "alertmanager.yml")
        with open(config, "w", encoding="utf-8") as fh:
            fh.write(CONFIG)
        return self.run(lambda port: [binary, "--config.file=" + config, "--storage.path=" + os.path.join(self.dir, "data"),
                                      "--web.listen-address=127.0.0.1:%d" % port, "--cluster.listen-address=", "--log.level=warn"],
                        timeout)
