"""The leaderboard's value cells as one filter: a 100 × 30 table has 3,000 of them, and
rendering each through the template engine costs more than the rest of the page together. The
accuracy-vs-grounding scatter's points likewise (200 systems: 200 marks of 12 numbers each).

Escaping: `title` (it carries metric names and reasons from evaluators) and a rule's texts are
HTML-escaped here. `text` and `ci` are formatted floats (`columns.fmt`) and `href` a reversed
run URL plus a slugified anchor (`selectors.boards._rows`, the only maker of a cell with a
link), so they cannot hold markup and are not escaped: at `?columns=all` (10,600 cells) their
three escapes per cell took half of this filter's time.
"""

from html import escape

from django import template
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


def _rule(rule: dict | None) -> str:
    if not rule:
        return ""
    return (f'<span class="rule" title="T2R of a dialogue without a correct recommendation: '
            f'{escape(rule["rule_text"])}">{escape(rule["text"])}</span>')


@register.filter
def metric_cells(cells) -> SafeString:
    parts = []
    for cell in cells:
        if cell.href:
            best = " best" if cell.rank == 1 else ""
            parts.append(
                f'<td class="num val{best}"><a href="{cell.href}" '
                f'title="{escape(cell.title)}">{cell.text}</a>'
                f'<span class="ci">{cell.ci}</span>{_rule(cell.rule)}</td>')
        else:
            parts.append(f'<td class="num val"><span class="muted" '
                         f'title="{escape(cell.title)}">—</span></td>')
    return mark_safe("".join(parts))  # noqa: S308 - escaped, or numbers and a URL (above)


@register.filter
def scatter_marks(points) -> SafeString:
    """The scatter's marks (`charts.scatter` points): a link, two whiskers and a circle each,
    with a label when there are at most 16 points. Label, title and href are escaped; the
    coordinates are rounded floats."""
    labelled = len(points) <= 16
    parts = []
    for p in points:
        cx, cy = p["cx"], p["cy"]
        label = (f'<text class="point-label" x="{p["lx"]}" y="{int(cy) - 7}" '
                 f'text-anchor="{escape(p["anchor"])}">{escape(p["label"])}</text>'
                 if labelled else "")
        parts.append(
            f'<a href="{escape(p["href"])}" class="mark"><line class="whisker" x1="{p["x1"]}" '
            f'x2="{p["x2"]}" y1="{cy}" y2="{cy}"/><line class="whisker" x1="{cx}" x2="{cx}" '
            f'y1="{p["y1"]}" y2="{p["y2"]}"/><circle class="point'
            f'{" baseline" if p["highlight"] else ""}" cx="{cx}" cy="{cy}" r="5"><title>'
            f'{escape(p["title"])}</title></circle>{label}</a>')
    return mark_safe("".join(parts))  # noqa: S308 - every piece above is escaped or a number
