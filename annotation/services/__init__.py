"""Writes of the annotation app, one module per concern.

Views, tasks and commands call these; each function takes keyword-only arguments and does one
thing inside one transaction. Pure decisions (what to sample, which letter, which item next,
whether a form is complete) live in `annotation.lib` (`sampling`, `blinding`, `handout`,
`taskforms`).

- ``sources``: the responses a study can judge (the reference turns, turn-protocol submissions).
- ``studies``: study creation (sampling, blinding letters, item snapshots) and its instructions.
- ``members``: joining a study, adding and excluding annotators.
- ``handout``: which item an annotator gets next, and releasing abandoned ones.
- ``handout_policy``: how a study hands items out (uniform or active), the active policy's
  waves and their inclusion probabilities.
- ``annotations``: drafts (autosave) and submitted annotations.
- ``study_exports``: the long-format CSV and the paper bundle.
- ``demo``: the demo study.
"""
