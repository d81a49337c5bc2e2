"""The four roles of annotation.md §Roles. Staff is Django's is_staff; the others are groups."""

from django.utils.functional import SimpleLazyObject

ANNOTATOR = "annotator"
RESEARCHER = "researcher"
STUDY_AUTHOR = "study_author"
GROUP_ROLES = (ANNOTATOR, RESEARCHER, STUDY_AUTHOR)


def user_roles(user) -> set[str]:
    if not user.is_authenticated:
        return set()
    cached = getattr(user, "_concord_roles", None)
    if cached is None:
        cached = set(user.groups.filter(name__in=GROUP_ROLES).values_list("name", flat=True))
        if user.is_staff:
            cached.add("staff")
        user._concord_roles = cached
    return cached


def has_role(user, role: str) -> bool:
    """Staff hold every role."""
    roles = user_roles(user)
    return "staff" in roles or role in roles


def roles_context(request):
    # lazy: pages that show no role chips (the item page) skip the query
    return {"user_roles": SimpleLazyObject(lambda: sorted(user_roles(request.user)))}
