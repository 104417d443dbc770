"""Who may read the page: the token, its cookie, the Host check and the response headers.

The server is read-only but shows task text, terminals and costs, so every request must
carry the random token printed at start: in the URL (`?token=`, the first visit) or in
the cookie set then (HttpOnly, SameSite=Strict: the page's own requests carry it, other
sites' never do). A page on another site that resolves its own name to 127.0.0.1 (DNS
rebinding) sends its own name in Host: only this server's names are answered.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs

# 'wasm-unsafe-eval' lets the player compile its terminal emulator (WebAssembly shipped
# inside its bundle); it allows no JavaScript eval. Everything else is 'self' or nothing.
CSP = (
    "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; "
    "connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'none'"
)
HEADERS = (
    ("Content-Security-Policy", CSP),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
    ("X-Frame-Options", "DENY"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
)
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def new_token() -> str:
    """A fresh random token (256 bits)."""
    return secrets.token_urlsafe(32)


def url_host(host: str) -> str:
    """`host` as it stands in a URL or a Host header (IPv6 addresses in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


@dataclass(frozen=True)
class Verdict:
    """What to do with a request: serve it (status 0), or refuse it with `status`."""

    status: int = 0
    reason: str = ""
    from_query: bool = False  # the token came in the URL: set the cookie, drop it from the URL


class Guard:
    """Checks each request's Host and token."""

    def __init__(self, token: str, host: str, port: int) -> None:
        self.token = token
        self.port = port
        names = {*LOOPBACK_NAMES, url_host(host).lower()}
        self.hosts = frozenset(f"{name}:{port}" for name in names)
        # Cookies are shared by every port of a host: the name keeps two servers apart.
        self.cookie_name = f"ptysup_token_{port}"

    def check(self, host_header: str | None, query: str, cookie_header: str | None) -> Verdict:
        """The verdict on a request from its Host header, query string and Cookie header."""
        if host_header is None or host_header.strip().lower() not in self.hosts:
            return Verdict(421, "this server answers only to its own address")
        given = parse_qs(query).get("token", [])
        if given:
            if self._valid(given[-1]):
                return Verdict(from_query=True)
            return Verdict(403, "wrong token")
        if self._valid(self._cookie(cookie_header)):
            return Verdict()
        return Verdict(403, "a token is needed: open the URL ptysup serve printed")

    def set_cookie(self) -> str:
        """The Set-Cookie value that carries the token for the page's own requests."""
        return f"{self.cookie_name}={self.token}; Path=/; HttpOnly; SameSite=Strict"

    def _cookie(self, header: str | None) -> str:
        if not header:
            return ""
        cookies: SimpleCookie = SimpleCookie()
        try:
            cookies.load(header)
        except CookieError:
            return ""
        morsel = cookies.get(self.cookie_name)
        return morsel.value if morsel is not None else ""

    def _valid(self, candidate: str) -> bool:
        # Constant time: how long a wrong token takes says nothing about the right one.
        return hmac.compare_digest(candidate.encode(), self.token.encode())
