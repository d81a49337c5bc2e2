"""The operator's named credentials as live systems use them (docs/operations.md,
"Credentials and model profiles").

A system stores the NAME of a credential (`System.live_credential`), never a variable: the
operator's `CONCORD_CREDENTIALS` alone says which variable a name stands for, and whose systems
may use it. A name that is not (or no longer) on that list is refused with a message naming
the setting, and nothing is sent.
"""

import os

from django.conf import settings
from django.core.exceptions import ValidationError

from evaluation.lib.credentials import SETTING


def credential_names(*, user) -> list[str]:
    """The names USER's systems may use, sorted."""
    username = getattr(user, "username", None)
    return sorted(name for name, credential in settings.CREDENTIALS.items()
                  if credential.allows(username))


def credential_problem(name: str, *, owner) -> str:
    """Why a system of OWNER may not use credential NAME ("" when it may, or NAME is empty)."""
    if not name:
        return ""
    offered = credential_names(user=owner)
    choices = (f"choose one of {', '.join(offered)}, or none" if offered
               else "it offers none to you, so choose none")
    credential = settings.CREDENTIALS.get(name)
    if credential is None:
        return f"credential {name!r} is not one the operator offers ({SETTING}): {choices}"
    if not credential.allows(getattr(owner, "username", None)):
        return (f"credential {name!r} is offered only to other users' systems ({SETTING}): "
                f"{choices}")
    return ""


def credential_check(name: str, *, owner) -> None:
    """ValidationError (on `live_credential`) unless OWNER's systems may use NAME (or none)."""
    problem = credential_problem(name, owner=owner)
    if problem:
        raise ValidationError({"live_credential": problem})


def credential_secret(name: str, *, owner) -> str | None:
    """The value credential NAME stands for on this machine (None for no credential);
    ValidationError when it is not offered to OWNER or its variable is not set here."""
    if not name:
        return None
    credential_check(name, owner=owner)
    value = os.environ.get(settings.CREDENTIALS[name].variable)
    if not value:
        raise ValidationError(f"credential {name!r} is offered but its value is not set on "
                              "this machine (ask the operator)")
    return value
