# -*- coding: utf-8 -*-
# Copyright: nodeops.rollout maintainers
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    """AWS connection options shared by every module (plugins/module_utils/clients/aws_connection.py: AWS_ARGUMENT_SPEC)."""

    DOCUMENTATION = r"""
options:
  region:
    description:
      - The AWS region to use, for example V(us-east-1).
      - When not set, E(AWS_REGION) is used, then E(AWS_DEFAULT_REGION), then the region of the selected profile
        in the AWS config file. The module fails if none of them gives a region.
    type: str
    aliases: [aws_region, ec2_region]
  profile:
    description:
      - A named profile from the AWS config and credentials files.
      - When not set, E(AWS_PROFILE) is used, then E(AWS_DEFAULT_PROFILE).
      - Mutually exclusive with O(access_key), O(secret_key) and O(session_token). When O(profile) is given as an
        option, keys in the environment are ignored, and the other way round.
    type: str
    aliases: [aws_profile]
  access_key:
    description:
      - The AWS access key ID.
      - When not set, E(AWS_ACCESS_KEY_ID) is used, then E(AWS_ACCESS_KEY).
      - Must be given together with O(secret_key).
    type: str
    aliases: [aws_access_key_id, aws_access_key, ec2_access_key]
  secret_key:
    description:
      - The AWS secret access key.
      - When not set, E(AWS_SECRET_ACCESS_KEY) is used, then E(AWS_SECRET_KEY).
    type: str
    aliases: [aws_secret_access_key, aws_secret_key, ec2_secret_key]
  session_token:
    description:
      - The AWS session token, for temporary credentials.
      - When not set, E(AWS_SESSION_TOKEN) is used, then E(AWS_SECURITY_TOKEN).
    type: str
    aliases: [aws_session_token, security_token, aws_security_token]
  endpoint_url:
    description:
      - Send every AWS API call to this URL instead of the regional AWS endpoints, for example a local AWS stand-in.
      - When not set, E(AWS_ENDPOINT_URL) is used, then E(AWS_URL).
    type: str
    aliases: [aws_endpoint_url, ec2_url]
  aws_ca_bundle:
    description:
      - Path to a CA bundle used to verify the TLS certificates of the AWS endpoints (every AWS API call, the EKS ones
        of C(eks_cluster) where a module takes it included), instead of the bundle botocore ships.
      - When not set, E(AWS_CA_BUNDLE) is used.
      - Not used when O(validate_certs=false).
    type: path
  retry_mode:
    description:
      - The botocore retry mode for throttled and transient errors.
      - V(standard) retries with exponential backoff and jitter; V(adaptive) also rate-limits the client
        when AWS throttles it.
    type: str
    choices: [standard, adaptive]
    default: standard
  max_attempts:
    description:
      - The total number of attempts per AWS API call, the first one included (botocore's C(total_max_attempts)).
      - V(1) disables retries.
    type: int
    default: 10
requirements:
  - boto3 >= 1.34.0
  - botocore >= 1.34.0
notes:
  - The aliases of the options are the names amazon.aws modules take, so that connection options written for amazon.aws
    (in C(module_defaults) too) work unchanged. The connection options set by C(module_defaults) on
    C(group/amazon.aws.aws) and C(group/kubernetes.core.k8s), and on ansible-core's short C(group/aws) and C(group/k8s),
    reach these modules as well, below the task's own
    arguments (the collection's README, "Setting the options once").
  - Every AWS API call carries the user agent C(nodeops.rollout/<version> <module>), so that CloudTrail and
    request logs show which module made it.
"""
