"""Live systems: the HTTP contract (docs/formats.md §4), its client, the allowed-hosts check
and Concord's baselines as in-process live systems. Pure: no Django."""
