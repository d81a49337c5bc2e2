"""File formats of formats.md: reading with precise errors, validating, writing canonically.

Pure Python, no Django: importers and validators call these and store nothing until a whole
file set is valid.
"""
