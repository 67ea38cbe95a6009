# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The connection options that ``module_defaults`` sets on amazon.aws's and kubernetes.core's action groups, for the
modules of this collection.

ansible-core resolves ``group/amazon.aws.aws`` from amazon.aws's own meta/runtime.yml only: a group of another
collection can include those modules (``metadata: extend_group``, as this collection's ``aws`` and ``k8s`` groups do),
but no collection can add itself to them. A play that already sets its AWS or Kubernetes connection once, on
``group/amazon.aws.aws`` or ``group/kubernetes.core.k8s``, would run this collection's modules without it (another
region, the default kubeconfig). So each module's action plugin reads those two entries of the task's
``module_defaults`` itself and takes from them the connection options the module has (names and aliases, as
amazon.aws and kubernetes.core name them), below everything else: the task's own arguments and ``module_defaults`` of
this collection's groups and modules (already in the task's arguments) win, whichever name they use.
"""

from __future__ import annotations

from ansible_collections.nodeops.rollout.plugins.module_utils.clients.aws_connection import AWS_ARGUMENT_SPEC
from ansible_collections.nodeops.rollout.plugins.module_utils.clients.kube_connection import K8S_ARGUMENT_SPEC

# the groups of the other collections, and the options of ours each may set
FOREIGN_GROUPS = (
    ("group/amazon.aws.aws", AWS_ARGUMENT_SPEC),
    ("group/kubernetes.core.k8s", K8S_ARGUMENT_SPEC),
)


def option_names(spec):
    """``{name or alias: option name}`` of an argument spec."""
    names = {}
    for name, definition in spec.items():
        names[name] = name
        for alias in definition.get("aliases") or ():
            names[alias] = name
    return names


def group_entries(module_defaults, group):
    """The values ``module_defaults`` (a task's: a dict or a list of dicts, later ones win) sets on ``group``."""
    if isinstance(module_defaults, dict):
        module_defaults = [module_defaults]
    values = {}
    for entry in module_defaults or ():
        if isinstance(entry, dict) and isinstance(entry.get(group), dict):
            values.update(entry[group])
    return values


def foreign_connection_defaults(group_values, args):
    """The arguments to add to a task's ``args``: from ``group_values`` (``{group: {option: value}}``, the values the
    task's ``module_defaults`` sets on each group of FOREIGN_GROUPS), the connection options of that group's kind that
    no name of the same option sets in ``args`` already. Other keys (amazon.aws's ``aws_config``, kubernetes.core's
    ``username``, ...) are left out: this collection's modules do not take them. An option set on both groups
    (``validate_certs``) is taken from the Kubernetes one, under the name it was given there."""
    every = {}
    for _group, spec in FOREIGN_GROUPS:
        every.update(option_names(spec))
    given = set(every[key] for key in args if key in every)
    chosen = {}
    for group, spec in FOREIGN_GROUPS:
        names = option_names(spec)
        for key, value in (group_values.get(group) or {}).items():
            if key in names and names[key] not in given:
                chosen[names[key]] = (key, value)
    return dict(chosen.values())
