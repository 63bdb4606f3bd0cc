"""Shared test settings.

Property tests (hypothesis) run 50 examples each in the everyday `make test` (it must stay
under a minute on a 2-core machine), and 1,000 each in `make test-props`, which CI runs:
`--hypothesis-profile=thorough` selects that profile, and `-m hypothesis` picks every
property test (hypothesis marks them). No test sets its own `max_examples`, so the profile
decides for all of them.
"""

from drivers import driver  # noqa: F401  the fixture of `@both` tests: Client or AsyncClient (drivers.py)
from hypothesis import settings

settings.register_profile("everyday", max_examples=50)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile("everyday")  # --hypothesis-profile=thorough (make test-props) overrides it
