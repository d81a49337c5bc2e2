"""A dialogue's scenario as people read it: who the user is and what they ask for.

A benchmark's scenario is a free-form record (formats.md §1): the demo's has a persona, a city,
an item type, preferences, constraints (each with the turn that stated it) and rejections (the
item rejected, why, at which turn). Printed as is it reads `kind: neighborhood, value: El
Presidio, item id: tus-r-016, turn index: 6`. Here it becomes:

- `brief`: "Persona" (name, persona) and "Request" (item type, city,
  category, neighbourhood, aspects, budget) in words, for the arena's player, who must never see
  the rejected items of the reference dialogue (they would tell the player what to refuse);
- `rows`: the brief, then the constraints and rejections one per line in words, then the other
  keys (words for snake_case, yes/no), for the dialogue viewer.

Pure: nothing here imports Django.
"""

from __future__ import annotations

from collections.abc import Mapping

# Keys the brief reads; the player sees nothing else of a scenario that has a brief.
_BRIEF_KEYS = ("user_profile", "persona", "persona_description", "item_type", "city",
               "preferences", "budget", "budget_max_price_level")
_DETAIL_KEYS = ("constraints", "rejections")
# Never shown to an arena player, brief or not: they name what the reference dialogue rejects,
# or the answers.
PLAYER_HIDDEN = ("rejections", "constraints", "dialogue_id", "target_item_ids",
                 "seen_item_ids", "gold_item_ids")


def words(value) -> str:
    """snake_case and kebab-case as words: `outdoor_seating` -> `outdoor seating`."""
    return str(value).replace("_", " ").replace("-", " ") if value is not None else ""


def text(value) -> str:
    """A value in words: yes/no for booleans, lists joined, objects as `key: value` pairs."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "—"
    if isinstance(value, Mapping):
        return ", ".join(f"{words(k)}: {text(v)}" for k, v in value.items()
                         if v not in (None, "", [], {}))
    if isinstance(value, list):
        joiner = "\n" if any(isinstance(v, Mapping) for v in value) else ", "
        return joiner.join(text(v) for v in value)
    return str(value)


def _who(scenario: Mapping) -> str:
    profile = scenario.get("user_profile") if isinstance(scenario.get("user_profile"),
                                                         Mapping) else {}
    persona = scenario.get("persona") or profile.get("persona") or ""
    if isinstance(persona, Mapping):  # {"name": …, "travel_style": …}: the name, then in words
        name = str(persona.get("name") or profile.get("name") or "")
        persona = text({k: v for k, v in persona.items() if k != "name"})
    else:
        name, persona = str(profile.get("name") or ""), words(persona)
    description = scenario.get("persona_description") or ""
    head = ", ".join(part for part in (name, persona) if part)
    return " — ".join(part for part in (head, description) if part)


def _request(scenario: Mapping) -> str:
    """`Boutique Hotel (hotel) in Marigny, New Orleans; wifi, upscale budget`."""
    preferences = scenario.get("preferences")
    preferences = preferences if isinstance(preferences, Mapping) else {}
    category, item_type = words(preferences.get("category")), words(scenario.get("item_type"))
    kind = f"{category} ({item_type})" if category and item_type else category or item_type
    place = ", ".join(part for part in (words(preferences.get("neighborhood")),
                                        str(scenario.get("city") or "")) if part)
    head = f"{kind} in {place}" if kind and place else kind or (f"somewhere in {place}"
                                                                 if place else "")
    wishes = [words(a) for a in preferences.get("aspects") or [] if a]
    if not preferences and isinstance(scenario.get("constraints"), list):
        wishes = [words(c["value"]) if isinstance(c["value"], str)  # "quiet", "El Presidio"
                  else _constraint({"kind": c.get("kind"), "value": c["value"]})  # yes/no, numbers
                  for c in scenario["constraints"]
                  if isinstance(c, Mapping) and c.get("value") not in (None, "")]
    if scenario.get("budget"):
        wishes.append(f"{words(scenario['budget'])} budget")
    parts = [head[:1].upper() + head[1:]] if head else []
    return "; ".join(parts + ([", ".join(wishes)] if wishes else []))


def brief(scenario: Mapping) -> list[tuple[str, str]]:
    """(label, sentence) rows of who the user is and what they want; empty when the scenario
    says neither."""
    rows = []
    who, request = _who(scenario), _request(scenario)
    if who:
        rows.append(("Persona", who))
    if request:
        rows.append(("Request", request))
    return rows


def player_rows(scenario: Mapping) -> list[tuple[str, str]]:
    """What an arena player sees: the brief, then the scenario's other keys in words; never
    the reference dialogue's rejections, constraints (the brief says what they ask for),
    answers or ids."""
    consumed = set(_BRIEF_KEYS) | set(PLAYER_HIDDEN)
    return brief(scenario) + [(words(key), text(value)) for key, value in scenario.items()
                              if key not in consumed and value not in (None, "", [], {})]


def _constraint(record) -> str:
    if not isinstance(record, Mapping):
        return text(record)
    said = record.get("stated_at_turn")
    value = record.get("value")
    shown = text(value) if isinstance(value, bool) else words(value)  # yes/no, not True/False
    what = f"{words(record.get('kind') or 'wish')}: {shown}"
    return f"turn {said}: {what}" if said is not None else what


def _rejection(record) -> str:
    if not isinstance(record, Mapping):
        return text(record)
    reason = record.get("reason")
    why = (f" (not {words(reason.get('value'))})" if isinstance(reason, Mapping)
           and reason.get("value") else f" ({text(reason)})" if reason else "")
    turn = record.get("turn_index")
    head = f"turn {turn}: " if turn is not None else ""
    return f"{head}{record.get('item_id') or 'an item'} rejected{why}"


def rows(scenario: Mapping) -> list[tuple[str, str]]:
    """The dialogue viewer's rows: the brief, the constraints and rejections one per line in
    words, then every other key. A scenario without a brief keeps all its keys."""
    out = brief(scenario)
    consumed = set(_BRIEF_KEYS) if out else set()
    if isinstance(scenario.get("constraints"), list) and scenario["constraints"]:
        out.append(("Stated wishes", "\n".join(_constraint(c) for c in scenario["constraints"])))
        consumed.add("constraints")
    if isinstance(scenario.get("rejections"), list) and scenario["rejections"]:
        out.append(("Rejections", "\n".join(_rejection(r) for r in scenario["rejections"])))
        consumed.add("rejections")
    out += [(words(key), text(value)) for key, value in scenario.items()
            if key not in consumed and value not in (None, "", [], {})]
    return out
