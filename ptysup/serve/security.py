"""Who may read the page: the token, its cookie, the Host check and the response headers.

The server is read-only but shows task text, terminals and costs, so every request must
carry the random token printed at start: in the URL (`?token=`, the first visit) or in
the cookie set then (HttpOnly, SameSite=Strict: the page's own requests carry it, other
sites' never do). A page on another site that resolves its own name to 127.0.0.1 (DNS
rebinding) sends its own name in Host: only this server's names are answered.

With `--control`, a second token gives the right to steer (its own cookie): a control
request is a POST that carries that cookie (never a token in its URL, which logs and
history keep), this server's Host, its own Origin, and a header a form on another site
cannot send (a cross-site script that adds it must ask first, and nothing here answers
the preflight): anything short of that is a 403.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
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
# The control page's xterm.js draws its theme and cell sizes with <style> elements it
# makes: those alone are let in, by a nonce fresh in each answer (see control.js).
CONTROL_CSP = CSP.replace("style-src 'self'", "style-src 'self' 'nonce-{nonce}'")
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
CONTROL_HEADER = "X-Ptysup-Control"  # "1" on every control request (see the module)
JSON_TYPE = "application/json"
CONTROL_HEADERS = ("Host", "Origin", CONTROL_HEADER, "Content-Type", "Cookie")  # what is judged


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
    control: bool = False  # the request carries the control token: it may steer


class Guard:
    """Checks each request's Host and token (and, for a control request, the rest)."""

    def __init__(self, token: str, host: str, port: int, control_token: str | None = None) -> None:
        self.token = token
        self.control_token = control_token
        self.port = port
        names = {*LOOPBACK_NAMES, url_host(host).lower()}
        self.hosts = frozenset(f"{name}:{port}" for name in names)
        # Cookies are shared by every port of a host: the name keeps two servers apart.
        self.cookie_name = f"ptysup_token_{port}"
        self.control_cookie_name = f"ptysup_control_{port}"

    def check(self, host_header: str | None, query: str, cookie_header: str | None) -> Verdict:
        """The verdict on a request from its Host header, query string and Cookie header."""
        if not self._own_host(host_header):
            return Verdict(421, "this server answers only to its own address")
        given = parse_qs(query).get("token", [])
        if given:
            if self._is_control(given[-1]):
                return Verdict(from_query=True, control=True)
            if _same(given[-1], self.token):
                return Verdict(from_query=True)
            return Verdict(403, "wrong token")
        if self._is_control(self._cookie(cookie_header, self.control_cookie_name)):
            return Verdict(control=True)
        if _same(self._cookie(cookie_header, self.cookie_name), self.token):
            return Verdict()
        return Verdict(403, "a token is needed: open the URL ptysup serve printed")

    def check_control(self, query: str, headers: Mapping[str, str]) -> Verdict:
        """The verdict on a control request (a POST): 403 unless it carries everything."""
        host = headers.get("Host")
        if not self._own_host(host):
            return Verdict(403, "this server answers only to its own address")
        if "token" in parse_qs(query):
            return Verdict(403, "a control request carries its token in the cookie, not the URL")
        if headers.get("Origin", "").strip().lower() != f"http://{(host or '').strip().lower()}":
            return Verdict(403, "a control request must come from this page (its Origin)")
        if headers.get(CONTROL_HEADER, "").strip() != "1":
            return Verdict(403, f"a control request carries the header {CONTROL_HEADER}: 1")
        content_type = headers.get("Content-Type", "").partition(";")[0].strip().lower()
        if content_type != JSON_TYPE:
            return Verdict(403, f"a control request's body is {JSON_TYPE}")
        if not self._is_control(self._cookie(headers.get("Cookie"), self.control_cookie_name)):
            return Verdict(403, "steering needs the control URL ptysup serve --control printed")
        return Verdict(control=True)

    def set_cookie(self, verdict: Verdict) -> str:
        """The Set-Cookie value that carries the token `verdict` was given, for the page's
        own requests."""
        if verdict.control and self.control_token is not None:
            name, value = self.control_cookie_name, self.control_token
        else:
            name, value = self.cookie_name, self.token
        return f"{name}={value}; Path=/; HttpOnly; SameSite=Strict"

    def _own_host(self, host_header: str | None) -> bool:
        return host_header is not None and host_header.strip().lower() in self.hosts

    def _is_control(self, candidate: str) -> bool:
        return self.control_token is not None and _same(candidate, self.control_token)

    @staticmethod
    def _cookie(header: str | None, name: str) -> str:
        if not header:
            return ""
        cookies: SimpleCookie = SimpleCookie()
        try:
            cookies.load(header)
        except CookieError:
            return ""
        morsel = cookies.get(name)
        return morsel.value if morsel is not None else ""


def _same(candidate: str, token: str) -> bool:
    """Constant time: how long a wrong token takes says nothing about the right one."""
    return bool(candidate) and hmac.compare_digest(candidate.encode(), token.encode())
