"""The two reads every logged-in request makes: its session and its user.

Django's database sessions and `ModelBackend`, with each read as one hand-written statement
(`core.rows`) instead of an ORM query; behaviour is unchanged (expired sessions are not
found, inactive users are not logged in). `SESSION_ENGINE = "core.auth"` and
`AUTHENTICATION_BACKENDS = ["core.auth.ModelBackend"]` select them.
"""

from django.contrib.auth import backends, get_user_model
from django.contrib.sessions.backends import db
from django.utils import timezone

from . import rows


class SessionStore(db.SessionStore):
    def _get_session_from_db(self):
        session = rows.one(self.model, (("session_key", "="), ("expire_date", ">")),
                           [self.session_key, timezone.now()])
        if session is None:
            self._session_key = None
        return session


class ModelBackend(backends.ModelBackend):
    def get_user(self, user_id):
        user = rows.one(get_user_model(), (("pk", "="),), [user_id])
        return user if user is not None and self.user_can_authenticate(user) else None
