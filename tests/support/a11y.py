"""Accessibility checks in the browser tests: axe-core (vendored, tests/support/axe/) run in
the page under test, bounded in time, failing on critical and serious violations."""

from pathlib import Path

AXE_VERSION = "4.10.3"
AXE_SOURCE = Path(__file__).with_name("axe") / "axe.min.js"
BLOCKING = ("critical", "serious")
# WCAG 2.0 and 2.1, levels A and AA, plus axe's best practices that decide whether a screen
# reader or keyboard user can use a page (landmarks, one h1, unique navigation names).
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]


def axe_violations(page, *, timeout_ms: int = 20_000) -> list[dict]:
    """Critical and serious axe violations on the page as it is now (not its scripts' future)."""
    if not page.evaluate("() => Boolean(window.axe)"):
        # evaluated by the DevTools protocol, so a Content-Security-Policy does not block it
        page.evaluate(AXE_SOURCE.read_text(encoding="utf-8") + "\n;undefined")
    result = page.evaluate(
        """([tags, timeout]) => Promise.race([
            axe.run(document, {runOnly: {type: "tag", values: tags},
                               resultTypes: ["violations"]}),
            new Promise((_, reject) => setTimeout(
                () => reject(new Error("axe took longer than " + timeout + " ms")), timeout)),
        ])""", [TAGS, timeout_ms])
    return [v for v in result["violations"] if v["impact"] in BLOCKING]


def describe(violations: list[dict]) -> str:
    """One line per violation and up to three offending elements, for assertion messages."""
    lines = []
    for v in violations:
        targets = ", ".join(" ".join(map(str, node["target"])) for node in v["nodes"][:3])
        lines.append(f"{v['impact']}: {v['id']} ({v['help']}) at {targets}"
                     + (f" and {len(v['nodes']) - 3} more" if len(v["nodes"]) > 3 else ""))
    return "\n".join(lines)


def assert_accessible(page, where: str = "") -> None:
    violations = axe_violations(page)
    assert not violations, f"{where or page.url}:\n{describe(violations)}"
