# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_html
short_description: A fleet rollout as one self-contained HTML page
version_added: 0.1.0
author: nodeops.rollout maintainers (@nodeops)
description:
  - Turns the C(fleet) that M(nodeops.rollout.fleet_state) returns (the fleet's ledger) into one HTML page that needs
    nothing from the network - what stopped the run and what to do next, the count of clusters by state, and per wave
    its limits, when it opened and ended, its gate's decision and each cluster's state, reason, versions before and
    after, times, attempts and a link to the cluster's own page.
options:
  _input:
    description: The C(fleet) of M(nodeops.rollout.fleet_state).
    type: dict
    required: true
  base:
    description: The directory the page is written in; links to the clusters' pages are relative to it.
    type: str
"""

EXAMPLES = r"""
- name: Write the fleet's page
  ansible.builtin.copy:
    content: "{{ fleet_report.fleet | nodeops.rollout.fleet_html('/var/log/rollouts') }}"
    dest: /var/log/rollouts/fleet.html
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The page.
  type: str
"""

from ansible_collections.nodeops.rollout.plugins.module_utils.core.version import COLLECTION_VERSION
from ansible_collections.nodeops.rollout.plugins.module_utils.report.fleet_page import fleet_html


def fleet_html_filter(fleet, base=None):
    return fleet_html(fleet, base, version=COLLECTION_VERSION)


class FilterModule:
    """nodeops.rollout.fleet_html"""

    def filters(self):
        return {"fleet_html": fleet_html_filter}
