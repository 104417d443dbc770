"""Headless Chromium (Debian's package, driven by playwright) watching for page errors."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

# The live tests run the real Claude Code and the Codex CLI.
from tests.e2e.conftest import codex_rig, rig  # noqa: F401

CHROMIUM = Path("/usr/bin/chromium")  # never playwright's own download
# Chromium reports a CSP violation as a console error; this makes sure it is also reported
# when a script provokes one silently (the listener runs outside the page's CSP).
REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (e) => {
  console.error("CSP violation: " + e.violatedDirective + " blocked " + e.blockedURI);
});
"""


@pytest.fixture(scope="session")
def chromium() -> Iterator[Browser]:
    """One browser for the session; skips (fails with PTYSUP_REQUIRE_E2E=1) without it."""
    if not CHROMIUM.exists():
        message = "the browser tests need Debian's chromium (scripts/setup.sh installs it)"
        if os.environ.get("PTYSUP_REQUIRE_E2E") == "1":
            pytest.fail(message)
        pytest.skip(message)
    with sync_playwright() as pw:
        # Root (CI, this container) cannot use Chromium's sandbox.
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), chromium_sandbox=False)
        yield browser
        browser.close()


@dataclass
class Watched:
    """A page and every error it reported (console errors, CSP violations, exceptions)."""

    page: Page
    errors: list[str] = field(default_factory=list)


@pytest.fixture
def watched(chromium: Browser) -> Iterator[Watched]:
    """A fresh browser context (no cookies) with one page, its errors collected."""
    context = chromium.new_context()
    context.add_init_script(REPORT_VIOLATIONS)
    page = context.new_page()
    w = Watched(page)
    page.on("console", lambda m: w.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: w.errors.append(f"uncaught: {exc}"))
    yield w
    context.close()
