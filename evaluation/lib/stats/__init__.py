"""Agreement, correlation and significance for Concord (spec: statistics.md; metrics.md §A, §E,
§F). Pure Python over plain arrays and dicts: nothing in this package imports Django.

Modules: ``results`` (the records every statistic returns), ``bootstrap`` (the one bootstrap),
``alpha`` and ``agreement`` (inter-annotator agreement), ``correlation`` (metric–human
meta-evaluation), ``comparison`` (paired tests between systems), ``arena`` (Elo and
Bradley–Terry), ``methods`` (method texts for exports), ``benchmark`` (timings).
"""
