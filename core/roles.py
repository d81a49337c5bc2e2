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


ROLE_LABELS = {ANNOTATOR: "annotator", RESEARCHER: "researcher", STUDY_AUTHOR: "study author"}


def role_needed(action: str, role: str) -> str:
    """A 403's reason: ACTION ("Creating studies") needs ROLE, and how an account gets it."""
    how = ("accounts made with Sign up have it; ask an operator to add it to yours"
           if role == RESEARCHER else "ask an operator to give it to your account")
    return f"{action} needs the {ROLE_LABELS[role]} role: {how}."


def staff_only(action: str) -> str:
    """A 403's reason when only staff (the site's operators) may do ACTION."""
    return f"Only staff (the site's operators) can {action}."
