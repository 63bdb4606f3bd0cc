"""The exercise checks of the notebooks: one function per exercise, each tested, one module per notebook.

A check cell in a notebook is one bare call, such as
`miniagent.exercises.check_01_1(french_reply)`, and it shows one line:

    exercise 1: done!
    exercise 1: not yet: <what failed, and where to look>
    exercise 1: that's not the right kind of answer: <what was expected instead>

The checks live in the package, not in the notebooks, so that each one can be tested
(`tests/test_exercises.py`): a reference solution passes, plausible wrong ones fail
with the hint they deserve, and odd-but-valid ones pass.

A check tests what an answer *does*, never a flag the learner sets. It runs the
learner's function on cases the learner cannot see, against mock clients scripted to
misbehave (a model that never stops, a tool call cut off by `max_tokens`), and reads
what was really sent (the mock's records, `client.exchanges`). Everything a check
needs from a notebook comes in as an argument: a check never reads notebook globals.

A check never raises. The learner's code runs through `_run`, which hides what it
prints, turns its exceptions into "not yet", and gives up on it after `TIMEOUT`
seconds (an endless loop). Whatever else an answer can raise is caught once, at the
check boundary in `_exercise`.

Only the standard library is imported here: the client, the mock, the loop and the
agent are imported inside the checks that use them, so `import miniagent` stays light.
"""

from miniagent.exercises._core import CHECKS, DONE, NOT_YET, TIMEOUT, WRONG_KIND, Verdict
from miniagent.exercises.n00 import check_00_1
from miniagent.exercises.n01 import check_01_1, check_01_2, check_01_3
from miniagent.exercises.n02 import check_02_1, check_02_2, check_02_3
from miniagent.exercises.n03 import check_03_1, check_03_2, check_03_3
from miniagent.exercises.n04 import check_04_1, check_04_2, check_04_3
from miniagent.exercises.n05 import check_05_1, check_05_2, check_05_3
from miniagent.exercises.n06 import check_06_1, check_06_2, check_06_3
from miniagent.exercises.n07 import check_07_1, check_07_2, check_07_3
from miniagent.exercises.n08 import check_08_1, check_08_2, check_08_3
from miniagent.exercises.n09 import check_09_1, check_09_2, check_09_3
from miniagent.exercises.n10 import check_10_1, check_10_2, check_10_3
from miniagent.exercises.n11 import check_11_1, check_11_2, check_11_3
from miniagent.exercises.n12 import check_12_1, check_12_2, check_12_3
from miniagent.exercises.n13 import check_13_1, check_13_2, check_13_3
from miniagent.exercises.n14 import check_14_1, check_14_2, check_14_3
from miniagent.exercises.n15 import check_15_1, check_15_2, check_15_3

__all__ = ["CHECKS", "DONE", "NOT_YET", "TIMEOUT", "WRONG_KIND", "Verdict",
           "check_00_1", "check_01_1", "check_01_2", "check_01_3", "check_02_1", "check_02_2",
           "check_02_3", "check_03_1", "check_03_2", "check_03_3", "check_04_1", "check_04_2",
           "check_04_3", "check_05_1", "check_05_2", "check_05_3", "check_06_1", "check_06_2",
           "check_06_3", "check_07_1", "check_07_2", "check_07_3",
           "check_08_1", "check_08_2", "check_08_3",
           "check_09_1", "check_09_2", "check_09_3",
           "check_10_1", "check_10_2", "check_10_3",
           "check_11_1", "check_11_2", "check_11_3",
           "check_12_1", "check_12_2", "check_12_3",
           "check_13_1", "check_13_2", "check_13_3",
           "check_14_1", "check_14_2", "check_14_3",
           "check_15_1", "check_15_2", "check_15_3"]
