"""The leaderboard's value cells as one filter: a 100 × 30 table has 3,000 of them, and
rendering each through the template engine costs more than the rest of the page together.

Escaping: `title` (it carries metric names and reasons from evaluators) is HTML-escaped here;
`text` and `ci` are formatted floats and `href` is a reversed URL plus a slugified anchor
(selectors.boards.Cell), so they cannot hold markup — they are escaped anyway, cheaply, because they
are short.
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
                f'<td class="num val{best}"><a href="{escape(cell.href)}" '
                f'title="{escape(cell.title)}">{escape(cell.text)}</a>'
                f'<span class="ci">{escape(cell.ci)}</span>{_rule(cell.rule)}</td>')
        else:
            parts.append(f'<td class="num val"><span class="muted" '
                         f'title="{escape(cell.title)}">—</span></td>')
    return mark_safe("".join(parts))  # noqa: S308 - every piece above is escaped
