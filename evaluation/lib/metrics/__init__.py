"""Trace metric suite: pure-Python metrics over plain data, no Django imports.

Modules map to the paper's metric families: ``accuracy`` (Recall@k, MRR, Hit@k),
``grounding`` (GS, CD, PC, CGS), ``entailment`` (NLI grounding, CGSent), ``practical``
(spatial coherence, route efficiency, price alignment, itinerary diversity), ``recovery``
(TSR, T2R, rejection recovery) and ``text`` (BLEU-4, ROUGE-L). ``suite`` runs them all.
"""
