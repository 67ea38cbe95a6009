"""One simulated clock for the whole sandbox.

Every delay inside the sandbox (instance boot, kubelet pod start, graceful termination, eviction latency)
is expressed in *simulated* seconds and converted to wall time through one speed factor, so a test can
run a realistic rollout in seconds and a benchmark can use realistic proportions.
"""

import threading
import time


class Clock:
    """Simulated time = (wall time since start) * speed."""

    def __init__(self, speed=1.0):
        if speed <= 0:
            raise ValueError("speed must be > 0, got %r" % (speed,))
        self.speed = float(speed)
        self._wall_start = time.monotonic()
        self._epoch = time.time()
        self._wake = threading.Condition()

    def now(self):
        """Simulated seconds since the sandbox started."""
        return (time.monotonic() - self._wall_start) * self.speed

    def wall_for(self, sim_seconds):
        """Wall seconds that correspond to ``sim_seconds`` of simulated time."""
        return max(0.0, float(sim_seconds)) / self.speed

    def timestamp(self, sim_seconds=None):
        """An RFC 3339 UTC timestamp (as Kubernetes writes them) for a simulated instant."""
        sim = self.now() if sim_seconds is None else sim_seconds
        wall = self._epoch + sim / self.speed
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(wall))

    def sleep(self, sim_seconds):
        time.sleep(self.wall_for(sim_seconds))
