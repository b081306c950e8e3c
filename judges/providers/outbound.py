"""Where a model judge may send requests, and the one way it sends them. Pure: no Django.

A collection admin configures a judge's URL, but only the server's operator decides which
hosts the server talks to (``VERITY_JUDGE_HOSTS``) and which environment variables hold
keys meant for them: otherwise a judge's URL reaches internal services (SSRF) and its key
variable sends the server's own secrets. So:

- a base URL is normalised (http or https, no userinfo, query or fragment; the path ends
  without ``/chat/completions``, which is always appended) and its host must be listed;
- every address the host resolves to must be public, or listed itself (an address or a
  network in the allow-list), checked when the judge is saved and again on every request,
  on the very address the connection is made to (a name that resolves elsewhere later,
  DNS rebinding, is refused);
- redirects are never followed, proxies from the environment are not used, and a request
  ends at its deadline and at a size limit whatever the server does.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import json
import re
import socket
import ssl
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_HOSTNAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$")
_DEFAULT_PORTS = {"http": 80, "https": 443}
SUFFIX = "/chat/completions"


class OutboundRefused(ValueError):
    """The URL or the address is not one the operator allows; the message says why and
    how to fix it."""


@dataclass(frozen=True)
class AllowList:
    """``VERITY_JUDGE_HOSTS`` parsed: hosts (with a port, or any port) and the addresses
    that may be private because the operator listed them."""

    hosts: frozenset[tuple[str, int | None]] = frozenset()
    networks: tuple[IPNetwork, ...] = field(default_factory=tuple)

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowList:
        """``host``, ``host:port``, ``1.2.3.4``, ``[::1]:8080`` or a network
        ``10.0.0.0/8`` (which allows those addresses, not a host). ``ValueError`` names a
        bad entry."""
        hosts: set[tuple[str, int | None]] = set()
        networks: list[IPNetwork] = []
        for raw in entries:
            entry = raw.strip().lower()
            if not entry:
                continue
            if "/" in entry:
                try:
                    networks.append(ipaddress.ip_network(entry, strict=False))
                except ValueError:
                    raise ValueError(f"VERITY_JUDGE_HOSTS: {raw!r} is not a network") from None
                continue
            host, port = _split_host_port(entry, raw)
            address = _address(host)
            if address is not None:
                networks.append(ipaddress.ip_network(address))
                host = str(address)
            elif not _HOSTNAME.match(host):
                raise ValueError(f"VERITY_JUDGE_HOSTS: {raw!r} is not a host name")
            hosts.add((host.rstrip("."), port))
        return cls(frozenset(hosts), tuple(networks))

    def allows_host(self, host: str, port: int) -> bool:
        return (host, None) in self.hosts or (host, port) in self.hosts

    def allows_address(self, address: IPAddress) -> bool:
        if address.version == 6 and address.ipv4_mapped is not None:  # type: ignore[union-attr]
            address = address.ipv4_mapped  # type: ignore[union-attr]
        if any(address in net for net in self.networks):
            return True
        return address.is_global and not address.is_multicast


def _split_host_port(entry: str, raw: str) -> tuple[str, int | None]:
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port_text = rest.removeprefix(":") if rest else ""
    elif entry.count(":") > 1:  # a bare IPv6 address
        host, port_text = entry, ""
    else:
        host, _, port_text = entry.partition(":")
    if not port_text:
        return host, None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"VERITY_JUDGE_HOSTS: {raw!r} has no valid port")
    return host, int(port_text)


def _address(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


@dataclass(frozen=True)
class Target:
    """A normalised base URL, split into what a connection needs."""

    scheme: str
    host: str
    port: int
    path: str

    @property
    def base_url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        if self.port != _DEFAULT_PORTS[self.scheme]:
            shown += f":{self.port}"
        return f"{self.scheme}://{shown}{self.path}"

    @property
    def request_path(self) -> str:
        return self.path + SUFFIX


def normalise(url: str) -> Target:
    """The URL as a judge's base: ``OutboundRefused`` says what is wrong with it."""
    url = url.strip()
    if any(ord(c) < 33 or ord(c) == 127 for c in url):
        raise OutboundRefused("the URL has spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise OutboundRefused(f"the URL cannot be read ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise OutboundRefused("the URL must start with http:// or https://")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise OutboundRefused(
            "the URL must not carry a user name or password; put the key in an "
            "environment variable and name it as the API key variable"
        )
    if parts.query or "?" in url:
        raise OutboundRefused("the URL must not have a query (?…)")
    if parts.fragment or "#" in url:
        raise OutboundRefused("the URL must not have a fragment (#…)")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise OutboundRefused("the URL names no host")
    path = parts.path.rstrip("/")
    if path.endswith(SUFFIX):
        path = path[: -len(SUFFIX)].rstrip("/")
    return Target(scheme, host, port or _DEFAULT_PORTS[scheme], path)


def check_target(target: Target, allow: AllowList, *, resolve: bool = True) -> None:
    """Refuse a host the operator did not list, and (with ``resolve``) a host that
    resolves to an address not allowed. A host that does not resolve now passes: every
    request checks again."""
    if not allow.allows_host(target.host, target.port):
        listed = ", ".join(sorted(h if p is None else f"{h}:{p}" for h, p in allow.hosts))
        raise OutboundRefused(
            f"host {target.host}:{target.port} is not in the server's allow-list "
            f"(VERITY_JUDGE_HOSTS: {listed or 'empty'}); ask the server's operator to add it"
        )
    if resolve:
        try:
            addresses = _resolve(target.host, target.port)
        except OSError:
            return
        for address in addresses:
            _check_address(address, target, allow)


def _resolve(host: str, port: int) -> list[IPAddress]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos]


def _check_address(address: IPAddress, target: Target, allow: AllowList) -> None:
    if not allow.allows_address(address):
        raise OutboundRefused(
            f"host {target.host} resolves to {address}, a private, loopback, link-local or "
            "reserved address; the server's operator must list that address in "
            "VERITY_JUDGE_HOSTS to allow it"
        )


@dataclass
class Reply:
    """One HTTP exchange: status, the body (at most ``max_bytes``), whether it was cut."""

    status: int
    reason: str
    headers: dict[str, str]
    body: bytes
    too_long: bool = False


class Timeout(Exception):
    pass


def post_json(
    target: Target,
    allow: AllowList,
    payload: dict[str, Any],
    *,
    headers: dict[str, str],
    timeout: float,
    max_bytes: int,
) -> Reply:
    """POST ``payload`` to the target's chat-completions path and read the answer.

    Raises ``Timeout`` when the whole exchange (connecting, sending, every byte of the
    answer) takes longer than ``timeout`` seconds: the connection is then closed, so the
    request is over before the caller retries it. ``OutboundRefused`` when the address
    connected to is not allowed; ``OSError``/``http.client.HTTPException`` otherwise.
    """
    deadline = time.monotonic() + timeout
    conn_cls = (
        http.client.HTTPSConnection if target.scheme == "https" else http.client.HTTPConnection
    )
    kwargs: dict[str, Any] = {"timeout": timeout}
    if target.scheme == "https":
        kwargs["context"] = _tls_context()
    conn = conn_cls(target.host, target.port, **kwargs)

    def connect(address: tuple[str, int], timeout: float, *args: Any, **kw: Any) -> socket.socket:
        # Resolve once, check every address, and connect to a checked one: the name
        # cannot resolve elsewhere between the check and the connection.
        last: OSError | None = None
        infos = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
        for info in infos:
            _check_address(ipaddress.ip_address(info[4][0].split("%", 1)[0]), target, allow)
        for info in infos:
            sockaddr = info[4]
            sock = socket.socket(info[0], info[1], info[2])
            try:
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                sock.connect(sockaddr)
            except OSError as exc:
                sock.close()
                last = exc
                continue
            opened.append(sock)
            return sock
        raise last or OSError(f"cannot connect to {target.host}:{target.port}")

    # The socket as connected: http.client lets go of conn.sock once the response owns
    # the connection (HTTP/1.0, "Connection: close"), but the deadline must still end it.
    opened: list[socket.socket] = []
    conn._create_connection = connect  # type: ignore[attr-defined]
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        for sock in opened:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    watchdog = threading.Timer(max(0.0, deadline - time.monotonic()), expire)
    watchdog.daemon = True
    watchdog.start()
    try:
        body = json.dumps(payload).encode("utf-8")
        conn.request(
            "POST",
            target.request_path,
            body=body,
            headers={
                **headers,
                "Content-Type": "application/json",
                "Accept": "application/json",
                "Accept-Encoding": "identity",
            },
        )
        response = conn.getresponse()
        chunks: list[bytes] = []
        size, too_long = 0, False
        while True:
            chunk = response.read1(65536)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                chunks.append(chunk[: max_bytes - (size - len(chunk))])
                too_long = True
                break
            chunks.append(chunk)
        if expired.is_set():
            raise Timeout()
        return Reply(
            status=response.status,
            reason=response.reason,
            headers={k.lower(): v for k, v in response.getheaders()},
            body=b"".join(chunks),
            too_long=too_long,
        )
    except (OSError, http.client.HTTPException):
        if expired.is_set() or time.monotonic() >= deadline:
            raise Timeout() from None
        raise
    finally:
        watchdog.cancel()
        conn.close()
        for sock in opened:
            sock.close()


_tls: ssl.SSLContext | None = None


def _tls_context() -> ssl.SSLContext:
    """Certificates checked against certifi's public CAs, or the bundle named by
    ``REQUESTS_CA_BUNDLE`` / ``SSL_CERT_FILE`` (a private CA), as requests did."""
    global _tls
    if _tls is None:
        import os

        bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("SSL_CERT_FILE")
        if not bundle:
            try:
                import certifi

                bundle = certifi.where()
            except ImportError:  # pragma: no cover - requests brings certifi
                bundle = None
        _tls = ssl.create_default_context(cafile=bundle)
    return _tls
