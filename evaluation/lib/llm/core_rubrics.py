"""CoRE evaluation guidelines and debate roles, written for Concord.

CoRE, §4.1 Table 1 (the twelve factors in four dimensions), Appendix D (per-factor
definition, evaluation standard, evaluation steps) and Appendix H (debate roles). The wording here
is our own; the scoring standards keep CoRE's counting rules: each standard counts something
observable in the ``<interaction>`` part (misaligned turns, unrepaired errors, grammatical
errors, less-known items, …) and maps the count to 0–4. Where CoRE leaves a gap (for
example Semantic Relevance only defines 4, 2 and 0, or "more than 4" errors leaves exactly 4
undefined), the rule is completed in the obvious monotone way and says so.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FactorGuideline:
    key: str
    name: str
    dimension: str
    definition: str
    scoring_standard: tuple[str, ...]  # counting rules, best score first
    steps: tuple[str, ...]


DIALOGUE_ACTIONS = "Dialogue actions"
LANGUAGE_EXPRESSION = "Language expression"
RECOMMENDED_ITEMS = "Recommended items"
RESPONSE_CONTENT = "Response content"

# Proportion bands shared by the "how many of the turns" rules (seed wording: all / most /
# about half / a few / none); fixed numbers make the judge's counting reproducible.
_BANDS = "(\u201cmost\u201d means at least 60%, \u201cabout half\u201d means 40% to 60%)"

FACTOR_GUIDELINES: tuple[FactorGuideline, ...] = (
    FactorGuideline(
        key="coherence",
        name="Coherence",
        dimension=DIALOGUE_ACTIONS,
        definition=(
            "Whether the system grasps what the user wants at each point of the conversation "
            "and does that: it recommends when asked for recommendations, describes an item "
            "when asked about it, and asks a clarifying question when the request is unclear, "
            "so that the exchange follows a logical thread."
        ),
        scoring_standard=(
            "Count the system turns in <interaction> that do not match what the user wanted "
            "at that moment (misaligned turns).",
            "0 misaligned turns: 4 points.",
            "1 misaligned turn: 3 points.",
            "2 misaligned turns: 2 points.",
            "3 misaligned turns: 1 point.",
            "4 or more misaligned turns: 0 points.",
        ),
        steps=(
            "For every user turn in <interaction>, state what the user was after (a "
            "recommendation, details about an item, a clarification, small talk, ...).",
            "Check whether the system turn that follows does that; mark it aligned or misaligned.",
            "Count the misaligned system turns.",
            "Explain your count, quoting each misaligned turn.",
            "Apply the scoring standard to the count.",
        ),
    ),
    FactorGuideline(
        key="recoverability",
        name="Recoverability",
        dimension=DIALOGUE_ACTIONS,
        definition=(
            "Whether the system repairs its mistakes once the user points them out: when the "
            "user rejects a suggestion as wrong or corrects a misunderstanding, the following "
            "system turns take that correction into account. A system whose mistakes are never "
            "pointed out by the user is treated as having nothing to repair."
        ),
        scoring_standard=(
            "Count the mistakes the user points out in <interaction> that the system fails to "
            "correct in its following turns (unrepaired mistakes).",
            "The user points out no mistake: 4 points.",
            "Every mistake the user points out is repaired: 4 points.",
            "1 unrepaired mistake: 3 points.",
            "2 unrepaired mistakes: 2 points.",
            "3 unrepaired mistakes: 1 point.",
            "4 or more unrepaired mistakes: 0 points.",
        ),
        steps=(
            "Find each user turn that signals a system mistake (a wrong item, a misunderstood "
            "request, a rejected suggestion with a reason).",
            "Read the system turns after it and decide whether the correction was acted upon.",
            "Count the unrepaired mistakes.",
            "Explain your count, naming each mistake and what the system did about it.",
            "Apply the scoring standard to the count.",
        ),
    ),
    FactorGuideline(
        key="proactiveness",
        name="Proactiveness",
        dimension=DIALOGUE_ACTIONS,
        definition=(
            "Whether the system takes the initiative instead of only reacting: it asks about "
            "the user's tastes, proposes directions, offers relevant information or follow-up "
            "questions, and so steers the conversation toward the user's needs."
        ),
        scoring_standard=(
            "Count the system turns in <interaction> and how many of them actively guide the "
            f"user (ask about preferences, suggest a direction, offer a follow-up) {_BANDS}.",
            "Every system turn guides the user: 4 points.",
            "Most system turns guide the user, only a few do not: 3 points.",
            "About half of the system turns guide the user: 2 points.",
            "Only a few system turns guide the user (fewer than 40%), but at least one: 1 point.",
            "No system turn guides the user: 0 points.",
        ),
        steps=(
            "Go through the system turns in <interaction> one by one.",
            "Mark each turn that takes initiative beyond answering the last user message.",
            "Count the marked turns and compute their share of all system turns.",
            "Explain your count with short quotes.",
            "Apply the scoring standard to the share.",
        ),
    ),
    FactorGuideline(
        key="grammatical_correctness",
        name="Grammatical correctness",
        dimension=LANGUAGE_EXPRESSION,
        definition=(
            "Whether the system's sentences follow standard grammar: well-formed sentence "
            "structure, subject-verb agreement, consistent tense and correct choice of words "
            "and phrases."
        ),
        scoring_standard=(
            "Count the obvious grammatical errors in the system turns of <interaction>. "
            "Punctuation is ignored. A title or proper name that exists (for example a film "
            "title) is not an error even if it looks ungrammatical; a made-up one is.",
            "0 grammatical errors: 4 points.",
            "1 grammatical error: 3 points.",
            "2 grammatical errors: 2 points.",
            "3 grammatical errors: 1 point.",
            "4 or more grammatical errors: 0 points.",
        ),
        steps=(
            "Read every system turn in <interaction>.",
            "List each obvious error: broken structure, agreement, tense, wrong word, repeated "
            "or missing words.",
            "Judge grammar only: leave out style, tone and whether the suggestions suit the user.",
            "Explain your list and count.",
            "Apply the scoring standard to the count.",
        ),
    ),
    FactorGuideline(
        key="naturalness",
        name="Naturalness",
        dimension=LANGUAGE_EXPRESSION,
        definition=(
            "Whether the system sounds like a fluent native speaker: everyday vocabulary and "
            "phrasing that is easy to follow, without stilted, robotic or needlessly complex "
            "wording, so that the conversation feels authentic."
        ),
        scoring_standard=(
            "Count the system turns in <interaction> that sound unnatural to a native speaker, "
            f"and their share of all system turns {_BANDS}.",
            "No system turn sounds unnatural: 4 points.",
            "A small share (under 40%) sounds unnatural, the rest sounds natural: 3 points.",
            "About half sounds unnatural: 2 points.",
            "Most sounds unnatural, only a small part sounds natural: 1 point.",
            "All of it sounds unnatural, to the point of confusing a native speaker: 0 points.",
        ),
        steps=(
            "Read each system turn in <interaction> as a native speaker would hear it.",
            "Mark the turns whose wording is awkward, mechanical or hard to follow.",
            "Count the marked turns and compute their share.",
            "Explain your marks with short quotes.",
            "Apply the scoring standard to the share.",
        ),
    ),
    FactorGuideline(
        key="appropriateness",
        name="Appropriateness",
        dimension=LANGUAGE_EXPRESSION,
        definition=(
            "Whether the system respects social, cultural and ethical norms: polite, respectful "
            "language with nothing offensive, insulting, harmful or culturally insensitive, so "
            "the user feels respected and at ease."
        ),
        scoring_standard=(
            "This factor has only two possible scores.",
            "The system stays polite and appropriate in every turn of <interaction>: 4 points.",
            "Any system turn contains vulgar, sexually explicit, offensive or discriminatory "
            "language: 0 points.",
        ),
        steps=(
            "Read each system turn in <interaction>.",
            "Look for impolite, vulgar, explicit, offensive or discriminatory wording.",
            "Explain what you found, quoting it if any.",
            "Give 4 or 0 according to the scoring standard.",
        ),
    ),
    FactorGuideline(
        key="effectiveness",
        name="Effectiveness",
        dimension=RECOMMENDED_ITEMS,
        definition=(
            "How well the items the system recommended match what the user is looking for, "
            "judged on the whole session list of recommended items."
        ),
        scoring_standard=(
            "A ground-truth item from <groundtruth_list> appears in "
            "<system_recommendation_list>: 4 points.",
            "Otherwise compare the listed items with the ground-truth item(s) in content, "
            "function and creator, and apply the first rule that holds:",
            "most listed items are very similar to the ground truth and fit the user well: "
            "3 points;",
            "most listed items are somewhat similar, or a few are very similar: 2 points;",
            "only a few listed items are somewhat similar: 1 point;",
            "no listed item is related and the user would not care for any of them: 0 points.",
            "When the ground truth is unknown, use the interests the user expressed in the "
            "conversation as the reference, and give 4 only if the list contains an item the "
            "user explicitly welcomed.",
        ),
        steps=(
            "Read what the user asked for, <groundtruth_list>, and <system_recommendation_list>.",
            "Check whether a ground-truth item is in the list.",
            "If not, judge how close each listed item is to the ground truth and the user's "
            "stated wishes.",
            "Explain which items fit and which do not.",
            "Apply the scoring standard.",
        ),
    ),
    FactorGuideline(
        key="novelty",
        name="Novelty",
        dimension=RECOMMENDED_ITEMS,
        definition=(
            "How fresh the recommended items are for the user: items that are not widely known "
            "or heavily promoted (little media coverage) introduce the user to something new "
            "and can broaden their tastes."
        ),
        scoring_standard=(
            "Count the less-known items L in <system_recommendation_list> (N items in total) "
            "and apply the first rule that holds:",
            "L is at least half of N, or L is 10 or more: 4 points;",
            "L is at least a quarter of N, or L is between 6 and 9: 3 points;",
            "L is between 3 and 5: 2 points;",
            "L is 1 or 2: 1 point;",
            "L is 0 (every item is well known): 0 points.",
        ),
        steps=(
            "Go through <system_recommendation_list> item by item.",
            "Decide for each item whether it is widely known or less known, using how much "
            "attention it has received.",
            "Count the less-known items and the list length.",
            "Explain your classification briefly.",
            "Apply the scoring standard to the counts.",
        ),
    ),
    FactorGuideline(
        key="diversity",
        name="Diversity",
        dimension=RECOMMENDED_ITEMS,
        definition=(
            "How varied the recommended items are while staying relevant, measured by how many "
            "distinct values the list covers along feature dimensions of the domain. Useful "
            "dimensions: films: genre, director, lead actors, release decade; books: genre or "
            "theme, author, original language or region; restaurants: cuisine, price range, "
            "dietary options, main ingredients; hotels and attractions: type, category, price "
            "level, neighbourhood; products: product type, brand, price range."
        ),
        scoring_standard=(
            "For each feature dimension, count the distinct values found in "
            "<system_recommendation_list>, then apply the first rule that holds:",
            "5 or more distinct values in at least two dimensions: 4 points;",
            "4 or more distinct values in at least two dimensions, or 5 or more in one "
            "dimension: 3 points;",
            "3 or more distinct values in at least two dimensions, or 4 or more in one "
            "dimension: 2 points;",
            "3 or more distinct values in one dimension: 1 point;",
            "otherwise (the items look alike in every dimension): 0 points.",
        ),
        steps=(
            "Pick the feature dimensions that fit the domain of the conversation.",
            "Note the value of each dimension for every listed item, from your knowledge.",
            "Count the distinct values per dimension.",
            "Explain the counts and any obvious bias in the list.",
            "Apply the scoring standard to the counts.",
        ),
    ),
    FactorGuideline(
        key="semantic_relevance",
        name="Semantic relevance",
        dimension=RESPONSE_CONTENT,
        definition=(
            "How closely what the system says is tied to the items in its own recommendation "
            "list: the items it names or discusses in its turns should be items from "
            "<system_recommendation_list>, not unrelated ones."
        ),
        scoring_standard=(
            "List the items the system names as suggestions in its turns of <interaction> "
            "(T items) and count how many of them appear in <system_recommendation_list> (F).",
            "F equals T and T is at least 1: 4 points.",
            "More than half but not all are in the list: 3 points.",
            "About half are in the list: 2 points.",
            "Fewer than half, but at least one, are in the list: 1 point.",
            "None are in the list, or the system names no item at all: 0 points.",
            # prompt text (its wording is part of the evaluator's version): left as it was
            "(The seed defines 4, 2 and 0; 3 and 1 fill the gaps between them.)",
        ),
        steps=(
            "Read <system_recommendation_list> and the system turns in <interaction>.",
            "List every item the system suggests in its text.",
            "Mark for each whether it appears in <system_recommendation_list>.",
            "Explain the list and the marks.",
            "Apply the scoring standard to the counts.",
        ),
    ),
    FactorGuideline(
        key="explainability",
        name="Explainability",
        dimension=RESPONSE_CONTENT,
        definition=(
            "Whether the system says why it recommends what it recommends, clearly and with "
            "enough detail to be convincing, linking each suggestion to the user's preferences "
            "or needs."
        ),
        scoring_standard=(
            "Count the system turns in <interaction> that recommend something (R) and how "
            f"many of them give a reason for the recommendation (E) {_BANDS}.",
            "E equals R and R is at least 1: 4 points.",
            "Most recommending turns give a reason: 3 points.",
            "About half give a reason: 2 points.",
            "Only a few (fewer than 40%), but at least one, give a reason: 1 point.",
            "No recommending turn gives a reason, or the system never recommends: 0 points.",
        ),
        steps=(
            "Find the system turns in <interaction> that recommend items.",
            "For each, decide whether it explains the choice in terms of the user's wishes.",
            "Note how specific and persuasive the explanations are.",
            "Count R and E and explain your decisions.",
            "Apply the scoring standard to the counts.",
        ),
    ),
    FactorGuideline(
        key="groundedness",
        name="Groundedness",
        dimension=RESPONSE_CONTENT,
        definition=(
            "Whether what the system states about items is factually correct and verifiable: "
            "no invented, false or misleading details about the items it talks about."
        ),
        scoring_standard=(
            "Count the obvious factual errors in what the system says about items in "
            "<interaction>.",
            "0 factual errors: 4 points.",
            "1 factual error: 3 points.",
            "2 factual errors: 2 points.",
            "3 factual errors: 1 point.",
            "4 or more factual errors: 0 points.",
        ),
        steps=(
            "Collect every factual claim the system makes about an item (plot, people, year, "
            "place, features, ...).",
            "Check each claim against what you reliably know.",
            "Count the claims that are clearly wrong or invented.",
            "Explain each error you counted.",
            "Apply the scoring standard to the count.",
        ),
    ),
)

FACTOR_KEYS: tuple[str, ...] = tuple(g.key for g in FACTOR_GUIDELINES)
GUIDELINE_BY_KEY: dict[str, FactorGuideline] = {g.key: g for g in FACTOR_GUIDELINES}


@dataclass(frozen=True)
class DebateRole:
    key: str
    name: str
    focus: tuple[str, ...]  # factor keys this role answers for
    description: str  # may contain {domain}


DEBATE_ROLES: tuple[DebateRole, ...] = (
    DebateRole(
        key="common_user",
        name="Common User",
        focus=("effectiveness", "recoverability", "coherence"),
        description=(
            "You are an everyday user of apps and social platforms. You like a system that "
            "understands what you mean even when you say it vaguely, finds something you like "
            "in as few turns as possible, and fixes its mistakes as soon as you point them out. "
            "You judge whether the suggestions and replies really meet the user's needs, "
            "keeping in mind users of different ages, jobs and backgrounds."
        ),
    ),
    DebateRole(
        key="domain_expert",
        name="Domain Expert",
        focus=("diversity", "novelty", "groundedness"),
        description=(
            "You are an expert in {domain}, with deep knowledge of classic and current works, "
            "their creators, genres and reception. Mainstream, repetitive suggestions bore you: "
            "you value varied lists and discoveries beyond the obvious hits, and you have no "
            "tolerance for wrong facts about the items, which ordinary users might not notice."
        ),
    ),
    DebateRole(
        key="linguist",
        name="Linguist",
        focus=("naturalness", "grammatical_correctness", "appropriateness"),
        description=(
            "You are a linguist. You expect a system to talk like a fluent, polite person: "
            "natural phrasing, correct grammar and vocabulary, and a register suited to the "
            "situation. You draw on pragmatics, semantics, syntax and sociolinguistics, and you "
            "know that clumsy or rude language undermines trust even in good suggestions."
        ),
    ),
    DebateRole(
        key="hci_expert",
        name="HCI Expert",
        focus=("explainability", "proactiveness", "semantic_relevance"),
        description=(
            "You are an expert in human-computer interaction. You look at the system as a "
            "decision aid: does it explain its choices, take the initiative to learn the user's "
            "preferences, and keep what it says consistent with the list it shows? You think "
            "about cognitive load, decision psychology and how the work is shared between "
            "the user and the system."
        ),
    ),
)
