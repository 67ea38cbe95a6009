"""Rendering a page the way a person opens it: Debian's chromium, headless, to a PNG screenshot, with the page's console
messages read from chromium's log (``:CONSOLE`` lines). scripts/test.sh installs chromium when it is missing."""

import os
import shutil
import subprocess
import tempfile

import pytest

BROWSERS = ("chromium", "chromium-browser")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def browser():
    """The chromium binary; skips the calling test, saying why, only where chromium is not installed (the test command
    installs it with apt-get where it can)."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("chromium is not installed and scripts/test.sh could not install it (apt-get install -y chromium): "
                "the report's rendering cannot be checked on this machine")
    return None


def render(page_path, png_path, width=1280, height=2400, timeout=120):
    """Screenshot ``page_path`` into ``png_path`` with ``chromium --headless --no-sandbox --disable-gpu``; returns the
    console messages the page logged (empty for a clean page)."""
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run(
            [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
             "--user-data-dir=" + profile, "--window-size=%d,%d" % (width, height), "--screenshot=" + str(png_path),
             "file://" + os.path.abspath(str(page_path))],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False)
    assert os.path.exists(str(png_path)), "chromium wrote no screenshot (rc %d):\n%s" % (proc.returncode, proc.stdout[-3000:])
    with open(str(png_path), "rb") as fh:
        assert fh.read(8) == PNG_SIGNATURE, "%s is not a PNG" % png_path
    return [line for line in proc.stdout.splitlines() if ":CONSOLE" in line]
