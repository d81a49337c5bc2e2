"""Precise, line-numbered format errors: `file:line: json.path: what was expected`."""

from dataclasses import dataclass

MAX_REPORTED_ISSUES = 50


@dataclass(frozen=True)
class FormatIssue:
    file: str
    line: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.path}: {self.message}"


class FormatError(Exception):
    """A file set failed validation; `issues` lists every problem found (up to a cap)."""

    def __init__(self, issues: list[FormatIssue]):
        self.issues = issues
        super().__init__("\n".join(str(issue) for issue in issues))


class IssueCollector:
    """Collects issues and stops collecting (but keeps counting) past a cap."""

    def __init__(self, cap: int = MAX_REPORTED_ISSUES):
        self.issues: list[FormatIssue] = []
        self.cap = cap
        self.total = 0

    def add(self, file: str, line: int | None, path: str, message: str) -> None:
        self.total += 1
        if len(self.issues) < self.cap:
            self.issues.append(FormatIssue(file, line, path, message))

    def __bool__(self) -> bool:
        return self.total > 0

    def raise_if_any(self) -> None:
        if not self.total:
            return
        issues = list(self.issues)
        if self.total > len(issues):
            issues.append(
                FormatIssue("(more)", None, "$", f"{self.total - len(issues)} further problems")
            )
        raise FormatError(issues)


def json_path(parts) -> str:
    """`$.turns[3].citations[0].quote` from jsonschema's deque of keys and indexes."""
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out
