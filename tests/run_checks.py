"""Checks on a finished run's store, shared by the Python end-to-end tests
(the C ones have the same check in tests/runtime/test_run.c).

kernels_evaluated_again(rundir): every evaluation of a kernel that was
queued again for the same phase while an earlier one was in flight, or
after one had finished with a result that says something about the kernel
(an aborted or infra_error one, withdrawn at its iteration's end or lost
with its device, may be redone). A candidate is the store's: one row per
normalized kernel of a workflow, so a duplicate here is a device second
spent twice. Returns one line per offending pair, empty when none."""
import os
import sqlite3

_AGAIN = ("SELECT a.candidate_id, a.phase, a.id, coalesce(a.status, 'unfinished'), b.id "
          "FROM evaluations a JOIN evaluations b ON b.candidate_id = a.candidate_id "
          "AND b.phase = a.phase AND b.id > a.id "
          "WHERE b.queued_us < coalesce(a.ended_us, b.queued_us + 1) "
          "OR a.status NOT IN ('aborted', 'infra_error') ORDER BY a.id")


def kernels_evaluated_again(rundir):
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(rundir, "run.db"), uri=True)
    try:
        rows = db.execute(_AGAIN).fetchall()
    finally:
        db.close()
    return ["candidate %d %s: evaluation %d (%s), then %d" % r for r in rows]


def assert_each_kernel_evaluated_once(case, rundir):
    again = kernels_evaluated_again(rundir)
    case.assertEqual(again, [], "%s: %d kernels evaluated again" % (rundir, len(again)))
