"""The operator's named credentials (docs/operations.md, "Credentials and model profiles").

`CONCORD_CREDENTIALS` maps short names to environment variables: `crs-demo=CRS_DEMO_KEY,
partner-x=PARTNER_X_KEY@alice|bob`. A researcher picks a NAME (or none) for a live system; only
the operator's list ever says which variable is read. An entry may end in `@user1|user2`: then
only systems owned by those users may use it. A name is lower case (letters, digits, `-`, `_`,
`.`), so it never reads like a variable.
"""

import re
from dataclasses import dataclass

SETTING = "CONCORD_CREDENTIALS"
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,49}$")
VARIABLE_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
USER_PATTERN = re.compile(r"^[\w.@+-]{1,150}$")


class CredentialSettingError(ValueError):
    """A malformed `CONCORD_CREDENTIALS` entry."""


@dataclass(frozen=True)
class Credential:
    """NAME stands for the value of the environment variable VARIABLE; USERS (usernames), when
    not empty, are the only owners whose systems may use it."""

    name: str
    variable: str
    users: frozenset[str] = frozenset()

    def allows(self, username: str | None) -> bool:
        return not self.users or (username is not None and username in self.users)


def parse_credentials(text: str) -> dict[str, Credential]:
    """The credentials of a `CONCORD_CREDENTIALS` value (empty: none), by name."""
    credentials: dict[str, Credential] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        credential = _entry(entry)
        if credential.name in credentials:
            raise CredentialSettingError(f"{SETTING}: the name {credential.name!r} is given twice")
        credentials[credential.name] = credential
    return credentials


def _entry(entry: str) -> Credential:
    name, equals, rest = (part.strip() for part in entry.partition("="))
    if not equals:
        raise CredentialSettingError(f"{SETTING}: {entry!r} is not name=VARIABLE")
    variable, at, users_text = (part.strip() for part in rest.partition("@"))
    if not NAME_PATTERN.match(name):
        raise CredentialSettingError(
            f"{SETTING}: {name!r} is not a credential name (lower-case letters, digits, "
            "'-', '_' and '.', at most 50)")
    if not VARIABLE_PATTERN.match(variable):
        raise CredentialSettingError(
            f"{SETTING}: {variable!r} (credential {name!r}) is not an environment variable name")
    users = frozenset(u.strip() for u in users_text.split("|") if u.strip()) if at else frozenset()
    if at and (not users or not all(USER_PATTERN.match(u) for u in users)):
        raise CredentialSettingError(
            f"{SETTING}: credential {name!r} ends in '@' but names no valid usernames "
            "(user1|user2)")
    return Credential(name=name, variable=variable, users=users)
