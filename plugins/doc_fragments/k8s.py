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
      - Whether to verify TLS certificates, of the Kubernetes API server and of the AWS endpoints. One option for both,
        as amazon.aws and kubernetes.core both name it O(validate_certs); V(false) turns verification off for both.
      - For Kubernetes, when not set, E(K8S_AUTH_VERIFY_SSL) is used, then E(K8S_AUTH_VALIDATE_CERTS); without them the
        kubeconfig's setting applies, and certificates are verified.
      - For AWS, when not set, certificates are verified (against O(aws_ca_bundle) when given). The K8S_AUTH_* variables
        do not apply to AWS.
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to a CA certificate bundle used to verify the API server.
      - When not set, E(K8S_AUTH_SSL_CA_CERT) is used.
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path to a client certificate for mutual TLS authentication.
      - When not set, E(K8S_AUTH_CERT_FILE) is used.
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to the private key of O(client_cert).
      - When not set, E(K8S_AUTH_KEY_FILE) is used.
    type: path
    aliases: [key_file]
  proxy:
    description:
      - URL of an HTTP proxy for every Kubernetes API request, for example V(http://proxy.example.com:3128).
      - When not set, E(K8S_AUTH_PROXY) is used. As in kubernetes.core, E(HTTPS_PROXY) and E(HTTP_PROXY) are not read.
      - Applies with every way of connecting, O(eks_cluster) too (the EKS and STS calls of O(eks_cluster) are AWS calls
        and are not sent through it).
    type: str
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
  - The aliases of the options are the names kubernetes.core modules take (O(validate_certs) as C(verify_ssl),
    O(ca_cert) as C(ssl_ca_cert), O(client_cert) as C(cert_file), O(client_key) as C(key_file)), so that connection
    options written for kubernetes.core (in C(module_defaults) too) work unchanged.
  - The connection is chosen in this order, first among the options given to the module, then among options and
    environment variables together; O(host) with O(api_key) or O(client_cert) and O(client_key); O(kubeconfig) or
    O(context); O(eks_cluster); O(host) alone; the in-cluster service account; E(KUBECONFIG) or C(~/.kube/config).
  - Every Kubernetes API request carries the user agent C(nodeops.rollout/<version> <module>).
"""
