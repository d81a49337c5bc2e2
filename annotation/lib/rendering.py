"""Study instructions: Markdown written by an author, rendered to HTML and then sanitized.

Markdown passes raw HTML through, so the output is cleaned with nh3 (an allow-list of tags and
attributes; no scripts, event handlers, styles or javascript: URLs) before it is marked safe.
"""

import markdown
import nh3

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "mark", "ol", "p", "pre",
    "s", "strong", "sub", "summary", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title"},
                      "abbr": {"title"}, "td": {"align"}, "th": {"align"}}


def render_markdown(text: str) -> str:
    html = markdown.markdown(text or "", extensions=["extra", "sane_lists"],
                             output_format="html")
    return nh3.clean(html, tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES,
                     url_schemes={"http", "https", "mailto"},
                     link_rel="noopener noreferrer nofollow")
