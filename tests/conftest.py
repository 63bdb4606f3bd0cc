"""Shared test settings.

Property tests run 100 examples each in the everyday `make test`, and 1,000 each in
`make test-props` (which CI runs): `--hypothesis-profile=thorough` selects the profile.
"""

from hypothesis import settings

settings.register_profile("thorough", max_examples=1000, deadline=None)
