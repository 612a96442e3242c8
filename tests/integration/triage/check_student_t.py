"""A check for `xlatools triage`: tests/integration/reduce/student_t.py (copied beside it), exit 1 when its
Student-t densities are not all NaN (DF = -1 is outside the domain: they must be NaN).

jaxlib 0.6.2 on CPU returns finite garbage there (jax-ml/jax#29537, exp of a constant-folded NaN);
0.6.1 and earlier return NaN."""

import sys

import numpy as np

from student_t import out  # runs the program (its jit module is the one that goes wrong)

sys.exit(0 if np.all(np.isnan(np.asarray(out["t_pdf"]))) else 1)
