"""Rendering a page the way a person opens it: Debian's chromium, headless, to a PNG screenshot, with the page's console
messages read from chromium's log (``:CONSOLE`` lines). scripts/test.sh installs chromium when it is missing."""

import html
import json
import os
import re
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


PROBE = """<script>
(function () {
  var out = {};
  try { out = (%s)(document, window); } catch (e) { out = {error: String(e)}; }
  var pre = document.createElement("pre");
  pre.id = "nodeops-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def probe(page_path, function, workdir, width=1280, height=2400, timeout=120):
    """What chromium computes for the page at ``page_path``: ``function`` is the text of a JavaScript function
    ``(document, window) -> JSON value`` run once the page is laid out (its styles computed, as a person's browser
    shows them); returns its value. The page itself has no script: a copy with the probe appended is loaded."""
    with open(str(page_path), encoding="utf-8") as fh:
        page = fh.read()
    probed = os.path.join(str(workdir), "probed-" + os.path.basename(str(page_path)))
    with open(probed, "w", encoding="utf-8") as fh:
        fh.write(page.replace("</body>", PROBE % function + "</body>"))
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run(
            [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir=" + profile,
             "--window-size=%d,%d" % (width, height), "--dump-dom", "file://" + os.path.abspath(probed)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout, check=False)
    found = re.search(r'<pre id="nodeops-probe">(.*?)</pre>', proc.stdout, re.S)
    assert found, "chromium ran no probe (rc %d):\n%s" % (proc.returncode, proc.stderr[-3000:])
    value = json.loads(html.unescape(found.group(1)))
    assert not (isinstance(value, dict) and "error" in value and len(value) == 1), value
    return value


# The banner's background of each kind of stop, as chromium computes it from the page's styles (report/page.py
# BANNER_KINDS): a failure's red is the failure's alone.
FAILED_BANNER, HELD_BANNER, ROLLED_BACK_BANNER = "rgb(253, 236, 234)", "rgb(253, 244, 227)", "rgb(244, 236, 248)"
BANNERS = """function (document, window) {
  return {title: document.querySelector("h1").innerText,
          banners: Array.prototype.map.call(document.querySelectorAll("div.banner"), function (banner) {
            return {background: window.getComputedStyle(banner).backgroundColor, text: banner.innerText};
          })};
}"""


def banners(page_path, workdir):
    """The page's title and each banner's computed background and text, as chromium shows them (a screenshot of the
    page is left beside it, ``<page>.png``): ``{"title", "banners": [{"background", "text"}]}``."""
    assert render(page_path, str(page_path)[:-len(".html")] + ".png", width=1180, height=900) == []
    return probe(page_path, BANNERS, workdir)
