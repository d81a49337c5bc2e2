"""The upload limit, for forms that check a file's size before sending it (static/js/concord.js;
the server refuses a larger body from its Content-Length: config.middleware)."""

from django import template
from django.conf import settings

register = template.Library()


@register.simple_tag
def max_upload_bytes() -> int:
    return settings.MAX_UPLOAD_BYTES
