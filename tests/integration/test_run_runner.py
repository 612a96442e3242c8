"""The runner with plain Python children: tee without deadlock, exit statuses, timeout kills the tree."""

import os
import sys
import time

from xlatools.proctree import alive as _alive
from xlatools.run.execute import program_exit_code as exit_code_for
from xlatools.run.process import execute

# child.py starts middle.py, which starts a grandchild in the group and one that leaves it (setsid).
SPAWNER = """\
import os, subprocess, sys, time
middle = os.path.join(os.path.dirname(os.path.abspath(__file__)), "middle.py")
child = subprocess.Popen([sys.executable, middle, sys.argv[1]])
while not os.path.exists(sys.argv[1]) or not open(sys.argv[1]).read():
    time.sleep(0.05)
with open(sys.argv[1], "a") as f:
    f.write(" %d" % child.pid)
print("ready", flush=True)
time.sleep(120)
"""
MIDDLE = """\
import subprocess, sys, time
sleeper = [sys.executable, "-c", "import time; time.sleep(120)"]
grand = subprocess.Popen(sleeper)
escaped = subprocess.Popen(sleeper, start_new_session=True)
open(sys.argv[1] + ".tmp", "w").write("%d %d" % (grand.pid, escaped.pid))
import os; os.replace(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(120)
"""


def run(tmp_path, code, timeout=None, args=()):
    script = tmp_path / "child.py"
    script.write_text(code)
    return execute(
        [sys.executable, str(script), *args],
        dict(os.environ),
        str(tmp_path),
        tmp_path / "out.log",
        tmp_path / "err.log",
        timeout,
        None,
        None,
    )


def test_heavy_output_on_both_streams_does_not_deadlock(tmp_path):
    code = (
        "import sys\nfor i in range(40000):\n    sys.stderr.write('E%d\\n' % i)\n    sys.stdout.write('O%d\\n' % i)\n"
    )
    result = run(tmp_path, code)
    assert result.status == "ok" and result.returncode == 0
    assert (tmp_path / "err.log").read_text().count("\n") == 40000
    assert (tmp_path / "out.log").read_text().splitlines()[-1] == "O39999"


def test_the_programs_status_and_signal_are_kept_and_named(tmp_path):
    result = run(tmp_path, "import sys; sys.exit(7)")
    assert (result.status, result.returncode, result.signal_name, result.describe()) == ("failed", 7, None, "exit 7")
    assert (exit_code_for(result), exit_code_for(result, "program")) == (1, 7)
    result = run(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    assert (result.status, result.returncode, result.describe()) == ("failed", -11, "killed by SIGSEGV")
    assert (exit_code_for(result), exit_code_for(result, "program")) == (1, 139)


def test_timeout_ends_the_whole_tree(tmp_path):
    pids_file = tmp_path / "pids"
    (tmp_path / "middle.py").write_text(MIDDLE)
    result = run(tmp_path, SPAWNER, timeout=5, args=(str(pids_file),))
    assert (result.status, exit_code_for(result), exit_code_for(result, "program")) == ("timeout", 124, 124)
    pids = [int(p) for p in pids_file.read_text().split()]
    assert len(pids) == 3
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if _alive(p)], "children or grandchildren survived the timeout"
    assert (tmp_path / "out.log").read_text() == "ready\n"
