"""The reference control plane's keys: a CA, kube-apiserver's serving certificate for 127.0.0.1, and the
service-account signing key. Generated per sandbox into its state directory, never reused."""

import datetime
import ipaddress
import os

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _write(path, data):
    with open(path, "wb") as fh:
        fh.write(data)
    os.chmod(path, 0o600)


def generate(directory):
    """Write ca.crt, apiserver.crt/.key and sa.key/sa.pub into ``directory``; return their paths."""
    os.makedirs(directory, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    not_before, not_after = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=2)

    ca_key = _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "nodeops-rollout sandbox CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(not_before).not_valid_after(not_after)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))

    server_key = _key()
    server = (x509.CertificateBuilder()
              .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
              .issuer_name(ca_name).public_key(server_key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(not_before).not_valid_after(not_after)
              .add_extension(x509.SubjectAlternativeName([
                  x509.DNSName("localhost"), x509.DNSName("kubernetes"), x509.DNSName("kubernetes.default.svc"),
                  x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.IPAddress(ipaddress.ip_address("10.96.0.1"))]),
                  critical=False)
              .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
              .sign(ca_key, hashes.SHA256()))

    sa_key = _key()
    paths = {name: os.path.join(directory, name) for name in ("ca.crt", "apiserver.crt", "apiserver.key", "sa.key", "sa.pub")}
    _write(paths["ca.crt"], ca.public_bytes(serialization.Encoding.PEM))
    _write(paths["apiserver.crt"], server.public_bytes(serialization.Encoding.PEM))
    _write(paths["apiserver.key"], _pem_key(server_key))
    _write(paths["sa.key"], _pem_key(sa_key))
    public = sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    _write(paths["sa.pub"], public)
    return paths
