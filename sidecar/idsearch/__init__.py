"""Finding engine IDs inside text: the rule, its folding and its two backends.

A library of its own: nothing here imports from the rest of `sidecar` (tests/test_layering.py).
The projection uses it to replace IDs in game-supplied text by aliases, the leak guard to
refuse a model request that holds one. The rule is stated in `match.py`'s docstring and in
docs/privacy.md; this face is what the rest of the sidecar imports.
"""

from sidecar.idsearch.backends import BACKEND
from sidecar.idsearch.fold import fold, invisible_only
from sidecar.idsearch.match import IdMatcher, matcher_for
from sidecar.idsearch.rule import MIN_ID_LENGTH, MIN_NUMBER_ID_LENGTH, MIN_WORD_ID_LENGTH, Mask, searchable

__all__ = [
    "BACKEND",
    "MIN_ID_LENGTH",
    "MIN_NUMBER_ID_LENGTH",
    "MIN_WORD_ID_LENGTH",
    "IdMatcher",
    "Mask",
    "fold",
    "invisible_only",
    "matcher_for",
    "searchable",
]
