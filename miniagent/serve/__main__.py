"""`python -m miniagent.serve`: the same as `python -m miniagent serve`."""

import sys

from miniagent.serve import main

sys.exit(main())
