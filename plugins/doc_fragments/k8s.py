# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    """Kubernetes connection options shared by every module (plugins/module_utils/clients/kube_connection.py: K8S_ARGUMENT_SPEC)."""

    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file.
      - When not set, E(K8S_AUTH_KUBECONFIG) is used. Without it, and without O(host), O(context) and O(eks_cluster),
        the in-cluster service account is used when E(KUBERNETES_SERVICE_HOST) is set, else E(KUBECONFIG) or
        C(~/.kube/config).
    type: path
  context:
    description:
      - The kubeconfig context to use instead of the current context.
      - When not set, E(K8S_AUTH_CONTEXT) is used.
    type: str
  host:
    description:
      - URL of the Kubernetes API server, for example V(https://api.example.com:6443).
      - With O(api_key), or with O(client_cert) and O(client_key), no kubeconfig is read. Alone, the server is
        called without credentials; together with O(kubeconfig) it overrides the kubeconfig's server.
      - When not set, E(K8S_AUTH_HOST) is used.
    type: str
  api_key:
    description:
      - A bearer token for the Kubernetes API.
      - When not set, E(K8S_AUTH_API_KEY) is used.
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate.
      - When not set, E(K8S_AUTH_VERIFY_SSL) is used, then E(K8S_AUTH_VALIDATE_CERTS); without them the kubeconfig's
        setting applies, and certificates are verified.
    type: bool
  ca_cert:
    description:
      - Path to a CA certificate bundle used to verify the API server.
      - When not set, E(K8S_AUTH_SSL_CA_CERT) is used.
    type: path
  client_cert:
    description:
      - Path to a client certificate for mutual TLS authentication.
      - When not set, E(K8S_AUTH_CERT_FILE) is used.
    type: path
  client_key:
    description:
      - Path to the private key of O(client_cert).
      - When not set, E(K8S_AUTH_KEY_FILE) is used.
    type: path
  eks_cluster:
    description:
      - Name of an Amazon EKS cluster. Its API endpoint and CA come from the EKS C(DescribeCluster) API, and the
        bearer token is signed locally from the AWS credentials (as C(aws eks get-token) does; the AWS CLI is not
        needed). The token is renewed during long operations.
      - Uses the AWS options O(region), O(profile), O(access_key), O(secret_key), O(session_token) and O(endpoint_url).
      - Cannot be combined with O(kubeconfig), O(context), O(host) or O(api_key).
    type: str
requirements:
  - kubernetes >= 28.1.0
notes:
  - The connection is chosen in this order, first among the options given to the module, then among options and
    environment variables together; O(host) with O(api_key) or O(client_cert) and O(client_key); O(kubeconfig) or
    O(context); O(eks_cluster); O(host) alone; the in-cluster service account; E(KUBECONFIG) or C(~/.kube/config).
  - Every Kubernetes API request carries the user agent C(nodeops.rollout/<version> <module>).
"""
