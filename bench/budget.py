"""Time budget of a benchmark run: shares per workload, repetitions per measurement, and when a
configuration must be skipped. Pure Python (no torch), so it is unit-tested on any machine.

The run has one wall-clock budget. Workloads run one after the other, each in its own process with
a deadline: its weight's share of the time still left, so time a workload does not use passes to
the next. Inside a workload the configurations run from the cheapest to the most expensive; each
gets an equal share of its workload's remaining time, and the repetitions of a measurement shrink
to fit it (never below MIN_REPS). A configuration whose predicted cost at MIN_REPS exceeds the time
left is skipped with a note; since the order is by cost, the ones skipped are the largest.
"""

import time

# Relative share of the budget per workload (prefill and decode have the most configurations).
WEIGHTS = {"prefill": 3.0, "decode": 3.0, "kl": 2.0, "mta": 1.5, "launch": 0.5}
MIN_REPS = 5
MAX_REPS = 100
QUICK_MAX_REPS = 20
# Untimed calls per measurement besides the timed repetitions: the correctness call (which also
# loads the kernel), one call that estimates the time, and the wall-clock cross-check.
EXTRA_CALLS = 1 + 1 + 3
# Per configuration: fresh inputs, the reference, allocator clean-up.
SETUP_S = 0.5
# Time kept back for writing the reports after the last workload.
REPORT_RESERVE_S = 5.0
# How long past its deadline a workload process may run before it is killed (a hung kernel).
GRACE_S = 20.0
# Seconds one configuration may run, when there is no prediction to go by, before its worker
# gives up on it as hung.
HANG_S = 30.0


def workload_share(remaining_s, pending):
    """Seconds for pending[0] out of `remaining_s` shared by the workloads in `pending` (in run
    order) according to WEIGHTS."""
    if not pending or remaining_s <= 0:
        return 0.0
    total = sum(WEIGHTS.get(name, 1.0) for name in pending)
    return remaining_s * WEIGHTS.get(pending[0], 1.0) / total


def plan_reps(slot_s, call_s, max_reps, min_reps=MIN_REPS):
    """Timed repetitions of one call lasting about `call_s` that fit in `slot_s`, clamped to
    [min_reps, max_reps]."""
    if call_s <= 0:
        return max_reps
    return max(min_reps, min(max_reps, int(slot_s / call_s)))


def predict_call_s(last, work):
    """Predicted seconds of one call on `work` units (FLOPs or bytes), scaled linearly from the
    last measured (seconds, work) of the same implementation; None before any measurement.
    Small configurations are dominated by fixed costs, so the prediction errs on the slow side."""
    if last is None:
        return None
    seconds, last_work = last
    if last_work <= 0:
        return seconds
    return seconds * max(work / last_work, 1.0)


def min_config_cost_s(call_s_by_impl):
    """Least time a configuration takes: every implementation at MIN_REPS plus its untimed calls.
    Implementations with no prediction yet count as free (the first configuration always runs)."""
    calls = MIN_REPS + EXTRA_CALLS
    return SETUP_S + sum(calls * s for s in call_s_by_impl.values() if s is not None)


class Clock:
    """Deadline arithmetic on a monotonic clock (injectable for tests)."""

    def __init__(self, deadline_s, now=time.monotonic):
        self._now = now
        self.deadline = deadline_s

    @classmethod
    def after(cls, seconds, now=time.monotonic):
        return cls(now() + seconds, now)

    def left(self):
        return max(0.0, self.deadline - self._now())

    def config_slot(self, configs_left):
        """Equal share of the time left for the next of `configs_left` configurations."""
        return self.left() / max(configs_left, 1)


def skip_note(predicted_s, left_s):
    return (f"skipped: time budget (needs about {predicted_s:.1f} s at {MIN_REPS} repetitions, "
            f"{left_s:.1f} s left)")


def hang_limit(predicted_s, slot_s, left_s):
    """(seconds, by_deadline): how long one configuration may run before its worker declares it
    hung, the largest of HANG_S, four times its predicted least cost (None: unknown) and twice
    its slot (its repetitions fill the slot), but never far past the workload's deadline; and
    whether the deadline set it (a configuration stopped then ran out of time)."""
    wanted = max(HANG_S, 2 * slot_s, 4 * (predicted_s or 0.0))
    return min(wanted, left_s + 5.0), wanted > left_s + 5.0
