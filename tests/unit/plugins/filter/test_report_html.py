# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter report_html takes the role's registered reads of the report's sections as they are."""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.filter.report_html import report_html_filter


def test_each_registered_loop_of_section_reads_stands_for_its_results():
    urls = {"results": [{"item": {"title": "Invariants", "url": "http://sandbox/invariants"}, "json": {"floor": "held"}}],
            "changed": False}
    files = {"results": [], "skipped": True, "msg": "No items in the list"}
    page = report_html_filter({"node_groups": []}, "prod-eu", [urls, files])
    assert "Invariants" in page and "floor" in page
    # a section given as it is still shows
    assert "Notes" in report_html_filter({"node_groups": []}, "prod-eu", [{"title": "Notes", "data": {"owner": "ops"}}])
