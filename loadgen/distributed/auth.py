"""Who may join a master: the shared worker secret and the binding rule.

The master/worker channel is Locust's ZeroMQ channel. With a secret (LOADTEST_WORKER_SECRET, the
same on the master and every worker) it runs ZMQ CURVE: the master's key pair is derived from the
secret, and a worker must know the master's public key to complete the handshake. CurveZMQ never
sends that key on the wire, so only a holder of the secret can join; the channel is also encrypted
(plans carry the endpoint's API key). Without a secret the channel is plain (ZMQ NULL), which is
allowed only while the master listens on loopback.

Pure: no gevent, no Locust (zmq only for the key arithmetic).
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass

import zmq
import zmq.utils.z85

from kernel.redact import register_secret

SECRET_ENV = "LOADTEST_WORKER_SECRET"
MIN_SECRET_CHARS = 16
# scrypt, not a bare hash: an eavesdropper on a handshake could test guessed secrets offline.
_SALT = b"loadtest worker channel v1"


class SecretError(ValueError):
    """The worker secret is unusable or missing where it is required; the message says why."""


def worker_secret() -> str | None:
    """The shared secret from the environment (None when unset or empty); registered for
    redaction so it is never printed."""
    value = os.environ.get(SECRET_ENV, "")
    if not value:
        return None
    register_secret(value)
    if len(value) < MIN_SECRET_CHARS:
        raise SecretError(
            f"{SECRET_ENV} has {len(value)} characters: use at least {MIN_SECRET_CHARS} "
            "(e.g. `openssl rand -hex 32`)"
        )
    return value


def is_loopback(host: str) -> bool:
    """True when every address `host` names is a loopback one (127.0.0.0/8, ::1, localhost).
    '*', '0.0.0.0', '' and names that do not resolve count as wide (the safe side)."""
    if host in ("", "*"):
        return False
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    addresses = {str(info[4][0]).split("%")[0] for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(address).is_loopback for address in addresses)


def check_master_bind(host: str, secret: str | None) -> str | None:
    """Refuse (SecretError) a master listening beyond loopback without a secret; return the
    warning to show when it listens wide with one, else None."""
    if is_loopback(host):
        return None
    if secret is None:
        raise SecretError(
            f"--master-bind {host or '*'} listens beyond loopback: set {SECRET_ENV} "
            f"(at least {MIN_SECRET_CHARS} characters, the same on every worker) so that only your "
            "workers can join"
        )
    return (
        f"the master listens on {host or '*'}, beyond loopback: workers must present {SECRET_ENV} "
        "(CURVE-encrypted channel)"
    )


def master_keys(secret: str) -> tuple[bytes, bytes]:
    """The master's CURVE key pair (public, secret), Z85-encoded, derived from the shared secret."""
    seed = hashlib.scrypt(secret.encode("utf-8"), salt=_SALT, n=2**14, r=8, p=1, dklen=32)
    secret_key = zmq.utils.z85.encode(seed)
    return zmq.curve_public(secret_key), secret_key


def refusal_message(master: str, secret: str | None) -> str:
    """What a refused worker says (one line)."""
    if secret is None:
        return (
            f"the master at {master} refused this worker: it requires a secret; "
            f"set {SECRET_ENV} to the master's"
        )
    return (
        f"the master at {master} refused this worker's handshake: {SECRET_ENV} differs from the "
        "master's (or the master has none)"
    )


REFUSED_ON_MASTER = f"refused a worker's connection: wrong or missing {SECRET_ENV}"


@dataclass
class Refusals:
    """Connections the master refused at the handshake, each warned of as it comes. The master
    goes on waiting (a stray or hostile connection must not end a run that the right workers
    would join); if they do not join, `hint()` gives the likely reason for its error."""

    warn: Callable[[str], None]
    count: int = 0

    def report(self) -> None:
        self.count += 1
        self.warn(REFUSED_ON_MASTER)

    def hint(self) -> str:
        """'' without refusals, else '; N connection(s) refused: …' for the join error."""
        if not self.count:
            return ""
        return f"; {self.count} connection(s) refused: wrong or missing {SECRET_ENV}"
