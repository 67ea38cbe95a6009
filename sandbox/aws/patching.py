"""Patches of moto that the sandbox applies once per process."""

import functools
import threading


def once(install):
    """Make ``install`` (a function of no arguments that patches moto) run the first time it is called in this process
    and never again, whichever thread calls it; a call made while another thread installs waits for it."""
    lock = threading.Lock()
    done = []

    @functools.wraps(install)
    def install_once():
        with lock:
            if not done:
                install()
                done.append(True)

    return install_once
