"""CRS Arena's pairwise votes: `data/votes_open.csv` and `data/votes_closed.csv` of
https://github.com/iai-group/crsarena-dial (Bernard et al., WSDM 2025). Pure Python.

Published shape: a CSV with the header `session_id, user_id, crs1, crs2, vote, feedback`, one
battle per row; `vote` is `crs1`'s or `crs2`'s name, or `tie` when the person could not decide;
`feedback` is optional free text. CRS Arena has no "both bad" answer.

Order: the votes are returned as CRS Arena's analysis reads them, every row of votes_open.csv
then every row of votes_closed.csv, each in file order; that is the cast order online Elo uses.
Satisfaction: CRS Arena saves each side of a battle as a conversation `<crs>_<user_id>` whose
metadata holds the person's end-of-conversation sentiment (satisfied or frustrated);
`attach_satisfaction` gives each vote its sides' sentiments, `satisfaction_a` for crs1 and
`satisfaction_b` for crs2 ("" when the conversation is not in the dialogue files). CRS Arena
records no accepted item.

A row that is malformed (wrong number of cells, an empty system name, the same system twice, a
vote that names neither system of its row) is reported with its file and line, and the whole
import fails: nothing of the file is returned.
"""

from pathlib import Path

from evaluation.lib.formats.errors import IssueCollector
from evaluation.lib.formats.judgments import csv_rows, read_limited

VOTE_FILES = {"votes_open.csv": "open", "votes_closed.csv": "closed"}
COLUMNS = ("session_id", "user_id", "crs1", "crs2", "vote", "feedback")
TIE = "tie"


def parse_votes_csv(raw: bytes, file: str, issues: IssueCollector, *,
                    setting: str | None = None) -> list[dict]:
    """The votes of one file in file order: {system_a, system_b, outcome (a|b|tie), reason,
    voter_ref, session_id, setting, file, line}. Problems go to ``issues``."""
    header, rows = csv_rows(raw, file, issues)
    if not header:
        return []
    missing = [column for column in COLUMNS if column not in header]
    if missing:
        issues.add(file, 1, "$", f"missing column(s) {', '.join(missing)} (expected the header "
                   f"{', '.join(COLUMNS)})")
        return []
    votes = []
    for line, row in rows:
        first, second = row["crs1"].strip(), row["crs2"].strip()
        vote = row["vote"].strip()
        problem = None
        if not first or not second:
            problem = ("$.crs1" if not first else "$.crs2", "expected a system name, got an "
                       "empty cell")
        elif first == second:
            problem = ("$.crs2", f"a vote compares {first!r} with itself")
        elif vote == first:
            outcome = "a"
        elif vote == second:
            outcome = "b"
        elif vote.lower() == TIE:
            outcome = "tie"
        else:
            problem = ("$.vote", f"expected {first!r}, {second!r} or {TIE!r} (the systems of "
                       f"this row), got {vote!r}")
        if problem:
            issues.add(file, line, *problem)
            continue
        votes.append({"system_a": first, "system_b": second, "outcome": outcome,
                      "reason": row["feedback"].strip(), "voter_ref": row["user_id"].strip(),
                      "session_id": row["session_id"].strip(), "setting": setting,
                      "file": file, "line": line})
    return votes


def read_votes(folder: Path, max_bytes: int, issues: IssueCollector) -> tuple[list[dict], list]:
    """The votes of the vote files in ``folder`` (open first, then closed) and the files read."""
    votes, found = [], []
    for name, setting in VOTE_FILES.items():
        path = Path(folder) / name
        if path.is_file():
            found.append(name)
            votes += parse_votes_csv(read_limited(path, max_bytes), name, issues, setting=setting)
    return votes, found


def attach_satisfaction(votes: list[dict], sentiments: dict[tuple[str, str], str]) -> int:
    """Set each vote's satisfaction_a / satisfaction_b from SENTIMENTS, {(crs, user id):
    sentiment} of the dialogue files; the number of sides that got one."""
    found = 0
    for vote in votes:
        for side, system in (("a", vote["system_a"]), ("b", vote["system_b"])):
            sentiment = sentiments.get((system, vote["voter_ref"]), "")
            vote[f"satisfaction_{side}"] = sentiment
            found += bool(sentiment)
    return found
