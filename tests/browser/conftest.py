"""Playwright driving Debian's chromium (Playwright cannot download its own browsers here)."""

import os
import shutil

import pytest

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def _chromium_path() -> str | None:
    return os.environ.get("CHROMIUM_PATH") or shutil.which("chromium")


@pytest.fixture(scope="session")
def browser():
    executable = _chromium_path()
    if executable is None:
        message = "chromium is not installed (make test installs it: apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; Django would otherwise refuse
    # the ORM calls that fixtures and test bodies make between browser steps.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


def htmx_settled(page) -> None:
    """Wait until htmx has swapped and settled its last response: only then do the new
    elements answer events (the URL is pushed before that)."""
    page.wait_for_function("() => !document.querySelector("
                           "'.htmx-request, .htmx-swapping, .htmx-settling, .htmx-added')")


def screenshot(page, name: str) -> None:
    """Keep a picture of what the test saw, for people to look at (screenshots/ is ignored)."""
    folder = os.environ.get("CONCORD_SCREENSHOTS")
    if folder:
        os.makedirs(folder, exist_ok=True)
        page.screenshot(path=os.path.join(folder, f"{name}.png"), full_page=True)
