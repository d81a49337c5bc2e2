"""FACE (Joko & Hasibi, "FACE: A Fine-grained Reference Free Evaluator for Conversational
Recommender Systems"): conversation particles (§2.1), scores read from the model's score
distribution (§2.2, Eq. 1) and instruction optimization with textual gradients, UCB bandits and
beam search (§2.3, Algorithm 1, Appendix B).

Pure Python: no Django import. `aspects` names the seven aspects, `prompts` holds the prompts
(our own wording, following Appendix E's structure), `particles` decomposes a response,
`scoring` implements Eq. 1 and the aggregation, `optimize` the selection steps of Algorithm 1.
"""
