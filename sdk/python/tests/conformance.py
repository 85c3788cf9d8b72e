"""The Python runner of the SDK conformance suite (conformance/ at the
repository's root): it interprets the scenario files with SeppClient. The
format and the step vocabulary are in conformance/README.md; the Go runner
(conformance/runner_test.go) is the reference this one follows."""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Optional

from sepp import (AlreadyExists, BatchResult, DeadLetterCause, DeadLetterRecord, EnqueueRequest, InternalError,
                  InvalidArgument, InvalidField, Job, JobCancelled, JobTemplate, JobState, LeaseLost, NotFound,
                  ParentFailure, PermissionDenied, PurgeTarget, QueueFull, QueueSettings, QueueStats, RedriveOptions,
                  RedriveSelection, RedriveTask, ResourceExhausted, RetryDirective, Schedule, ScheduleDefinition,
                  ScheduledTooFar, SeppClient, SeppError, Unauthenticated, Unavailable, UniqueConflict, UniqueOptions,
                  UnknownOutcome, WrongState)
from sepp.types import ActionResult, Delivery

SCENARIOS = Path(__file__).resolve().parents[3] / "conformance" / "scenarios"

_VAR = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


class Mismatch(Exception):
    """A step did not do what its scenario expects (or the scenario is
    malformed)."""


class StepError(Exception):
    """A failed call, named by the suite's error kind."""

    def __init__(self, kind: str, field: str, err: Exception) -> None:
        super().__init__(f"{kind} (field {field!r}): {err}")
        self.kind = kind
        self.field = field


@dataclass
class Step:
    op: str
    args: dict[str, Any] = field(default_factory=dict)
    expect: Any = None
    error: Optional[dict[str, str]] = None
    save: dict[str, str] = field(default_factory=dict)
    within_ms: int = 0


@dataclass
class Scenario:
    description: str
    steps: list[Step]


def parse_scenario(text: str) -> Scenario:
    raw = json.loads(text)
    if set(raw) - {"description", "steps"}:
        raise Mismatch(f"unknown scenario fields {sorted(set(raw) - {'description', 'steps'})}")
    steps = []
    for s in raw["steps"]:
        unknown = set(s) - {"op", "args", "expect", "error", "save", "within_ms"}
        if unknown:
            raise Mismatch(f"unknown step fields {sorted(unknown)}")
        err = s.get("error")
        if err is not None and set(err) - {"kind", "field"}:
            raise Mismatch(f"unknown error fields {sorted(set(err) - {'kind', 'field'})}")
        steps.append(Step(s["op"], s.get("args") or {}, s.get("expect"), err, s.get("save") or {},
                          s.get("within_ms", 0)))
    if not steps:
        raise Mismatch("no steps")
    return Scenario(raw.get("description", ""), steps)


def load_scenarios() -> dict[str, Scenario]:
    return {p.stem: parse_scenario(p.read_text()) for p in sorted(SCENARIOS.glob("*.json"))}


def substitute(v: Any, variables: dict[str, Any]) -> Any:
    """${name} in every string: a string that is only a reference takes the
    value with its type; inside a longer one the value is written in."""
    if isinstance(v, str):
        m = _VAR.fullmatch(v)
        if m:
            if m.group(1) not in variables:
                raise Mismatch(f"unknown variable ${{{m.group(1)}}}")
            return variables[m.group(1)]

        def repl(m: re.Match[str]) -> str:
            if m.group(1) not in variables:
                raise Mismatch(f"unknown variable ${{{m.group(1)}}}")
            return str(variables[m.group(1)])

        return _VAR.sub(repl, v)
    if isinstance(v, dict):
        return {k: substitute(e, variables) for k, e in v.items()}
    if isinstance(v, list):
        return [substitute(e, variables) for e in v]
    return v


def _show(v: Any) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def match(path: str, expected: Any, actual: Any) -> None:
    """Raise Mismatch where actual differs: objects match partially (null
    expects the key unset or null), arrays element by element, scalars by
    value (a bool is not a number)."""
    if expected is None:
        if actual is not None:
            raise Mismatch(f"{path}: expected null, got {_show(actual)}")
    elif isinstance(expected, dict):
        if not isinstance(actual, dict):
            raise Mismatch(f"{path}: expected an object, got {_show(actual)}")
        for k in sorted(expected):
            match(f"{path}.{k}", expected[k], actual.get(k))
    elif isinstance(expected, list):
        if not isinstance(actual, list):
            raise Mismatch(f"{path}: expected an array, got {_show(actual)}")
        if len(actual) != len(expected):
            raise Mismatch(f"{path}: expected {len(expected)} elements, got {len(actual)}: {_show(actual)}")
        for i, (e, a) in enumerate(zip(expected, actual)):
            match(f"{path}[{i}]", e, a)
    elif type(expected) is not type(actual) and not (
            isinstance(expected, (int, float)) and isinstance(actual, (int, float))
            and not isinstance(expected, bool) and not isinstance(actual, bool)):
        raise Mismatch(f"{path}: expected {_show(expected)}, got {_show(actual)}")
    elif expected != actual:
        raise Mismatch(f"{path}: expected {_show(expected)}, got {_show(actual)}")


def lookup(v: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(v, dict) and part in v:
            v = v[part]
        elif isinstance(v, list) and part.isdigit() and int(part) < len(v):
            v = v[int(part)]
        else:
            raise Mismatch(f"no {part!r} in {_show(v)}")
    return v


# The suite's error kinds, the most specific first (a cancelled lease is
# also a lost one; a unique conflict an AlreadyExists).
_KINDS: list[tuple[str, type[SeppError]]] = [
    ("job_cancelled", JobCancelled), ("lease_lost", LeaseLost), ("scheduled_too_far", ScheduledTooFar),
    ("queue_full", QueueFull), ("unique_conflict", UniqueConflict), ("invalid_argument", InvalidArgument),
    ("not_found", NotFound), ("wrong_state", WrongState), ("already_exists", AlreadyExists),
    ("resource_exhausted", ResourceExhausted), ("unknown_outcome", UnknownOutcome), ("unavailable", Unavailable),
    ("permission_denied", PermissionDenied), ("unauthenticated", Unauthenticated), ("internal", InternalError),
]


def error_kind(err: BaseException) -> str:
    for kind, cls in _KINDS:
        if isinstance(err, cls):
            return kind
    return "unknown"


def _ms(n: Any) -> timedelta:
    return timedelta(milliseconds=int(n))


def _whole_ms(d: timedelta) -> int:
    return d // timedelta(milliseconds=1)


def _job(j: Job) -> dict[str, Any]:
    return {"job_id": j.id, "queue": j.queue, "job_type": j.job_type, "payload": j.payload.decode(),
            "state": str(j.state), "priority": j.priority, "attempt": j.attempt, "max_attempts": j.max_attempts,
            "last_reason": j.last_reason,
            "parents": [{"job_id": p.job_id, "state": str(p.state),
                         "cause": str(p.cause) if p.state == JobState.DEAD else None, "ended": p.ended}
                        for p in j.parents],
            "on_parent_failure": None if j.on_parent_failure is None else str(j.on_parent_failure),
            "waiting_children": list(j.waiting_children), "waiting_children_total": j.waiting_children_total}


def _dead_letter(r: DeadLetterRecord) -> dict[str, Any]:
    return {"job_id": r.job.id, "queue": r.job.queue, "job_type": r.job.job_type, "payload": r.job.payload.decode(),
            "cause": str(r.cause), "final_attempt": r.final_attempt, "last_reason": r.last_reason or ""}


def _stats(q: QueueStats) -> dict[str, Any]:
    return {"name": q.name, "paused": q.paused, "scheduled": q.scheduled, "ready": q.ready, "reserved": q.reserved,
            "dead": q.dead, "blocked": q.blocked, "tags": dict(q.tags) or None}


def _settings(s: QueueSettings) -> dict[str, Any]:
    def ms(d: Optional[timedelta]) -> Optional[int]:
        return None if d is None else _whole_ms(d)

    return {"default_priority": s.default_priority, "default_max_attempts": s.default_max_attempts,
            "retry_delay_ms": ms(s.retry_delay), "retry_backoff": s.retry_backoff,
            "retry_delay_max_ms": ms(s.retry_delay_max), "max_schedule_horizon_ms": ms(s.max_schedule_horizon),
            "max_length": s.max_length, "dead_letter_queue": s.dead_letter_queue,
            "tags": None if s.tags is None else dict(s.tags)}


def _queue_settings(a: dict[str, Any]) -> QueueSettings:
    def ms(key: str) -> Optional[timedelta]:
        return _ms(a[key]) if key in a else None

    return QueueSettings(default_priority=a.get("default_priority"), default_max_attempts=a.get("default_max_attempts"),
                         retry_delay=ms("retry_delay_ms"), retry_backoff=a.get("retry_backoff"),
                         retry_delay_max=ms("retry_delay_max_ms"), max_schedule_horizon=ms("max_schedule_horizon_ms"),
                         max_length=a.get("max_length"), dead_letter_queue=a.get("dead_letter_queue"),
                         tags=a.get("tags"))


def _actions(rs: list[ActionResult]) -> dict[str, Any]:
    return {"results": [{"job_id": r.job_id, "error": None if r.error is None else error_kind(r.error)} for r in rs]}


def _task(t: RedriveTask) -> dict[str, Any]:
    return {"id": t.id, "state": str(t.state), "queue": t.options.selection.queue, "fresh": t.options.fresh,
            "to_queue": t.options.to_queue, "rate": t.options.rate, "moved": t.moved, "remaining": t.remaining}


_CAUSES = {str(c): c for c in DeadLetterCause if c is not DeadLetterCause.UNKNOWN}


def _redrive(a: dict[str, Any]) -> RedriveOptions:
    cause = DeadLetterCause.UNKNOWN
    if "cause" in a:
        if a["cause"] not in _CAUSES:
            raise Mismatch(f"argument 'cause': unknown cause {a['cause']!r}")
        cause = _CAUSES[a["cause"]]
    sel = RedriveSelection(queue=a.get("queue", ""), cause=cause, job_type=a.get("job_type", ""),
                           reason_contains=a.get("reason_contains", ""))
    return RedriveOptions(sel, to_queue=a.get("to_queue", ""), fresh=a.get("fresh", False), rate=a.get("rate", 0))


_POLICIES = {str(p): p for p in ParentFailure}


def _enqueue_request(a: dict[str, Any]) -> EnqueueRequest:
    """enqueue's arguments (also each item of enqueue_batch's jobs)."""
    policy = a.get("on_parent_failure")
    if policy is not None and policy not in _POLICIES:
        raise Mismatch(f"argument 'on_parent_failure': want cancel or run, got {policy!r}")
    req = EnqueueRequest(a["queue"], a["job_type"], a.get("payload", "").encode(), priority=a.get("priority"),
                         max_attempts=a.get("max_attempts", 0), idempotency_key=a.get("idempotency_key", ""),
                         after=list(a.get("after", [])), on_parent_failure=_POLICIES.get(policy or ""))
    if "delay_ms" in a:
        req.scheduled_at = datetime.now(timezone.utc) + _ms(a["delay_ms"])
    if "unique_key" in a:
        req.unique = UniqueOptions(key=a["unique_key"], refuse=a.get("unique_refuse", False))
    if "ttl_ms" in a:
        req.ttl = _ms(a["ttl_ms"])
    return req


def _batch_item(r: BatchResult) -> dict[str, Any]:
    if r.error is not None or r.result is None:
        return {"job_id": None, "state": None, "duplicate": None,
                "error": error_kind(r.error) if r.error else "unknown"}
    return {"job_id": r.result.job_id, "state": str(r.result.state), "duplicate": r.result.duplicate, "error": None}


def _schedule(s: Schedule) -> dict[str, Any]:
    """A schedule's stable part: no fire times or counters, which depend on
    the clock."""
    d = s.definition
    return {"name": d.name, "paused": d.paused, "queue": d.template.queue, "job_type": d.template.job_type,
            "payload": d.template.payload.decode(), "cron": d.cron,
            "interval_ms": 0 if d.interval is None else _whole_ms(d.interval), "time_zone": d.time_zone}


class Driver:
    """Runs steps with SeppClient; keeps each reserved job's last delivery
    for ack, nack, release and extend_lease."""

    def __init__(self, client: SeppClient) -> None:
        self.c = client
        self.deliveries: dict[int, Delivery] = {}

    def _delivery(self, a: dict[str, Any]) -> Delivery:
        job_id = a.get("job_id")
        if job_id not in self.deliveries:
            raise Mismatch(f"job {job_id} was never reserved in this scenario")
        return self.deliveries[job_id]

    async def call(self, op: str, a: dict[str, Any]) -> dict[str, Any]:
        try:
            return await self._dispatch(op, a)
        except SeppError as e:
            named = e.field if isinstance(e, (InvalidField, NotFound, AlreadyExists)) else ""
            raise StepError(error_kind(e), named, e) from e

    async def _dispatch(self, op: str, a: dict[str, Any]) -> dict[str, Any]:
        c = self.c
        if op == "enqueue":
            r = await c.enqueue(_enqueue_request(a))
            return {"job_id": r.job_id, "state": str(r.state), "duplicate": r.duplicate}
        if op == "reserve":
            lease = _ms(a["lease_ms"]) if "lease_ms" in a else None
            ds = await c.reserve(a["queue"], max=a.get("max", 1) or 1, worker_id="conformance", lease=lease)
            jobs = []
            for d in ds:
                self.deliveries[d.ctx.job_id] = d
                jobs.append({"job_id": d.ctx.job_id, "queue": d.job.queue, "job_type": d.job.job_type,
                             "payload": d.job.payload.decode(), "priority": d.job.priority, "attempt": d.ctx.attempt,
                             "max_attempts": d.ctx.max_attempts})
            return {"jobs": jobs}
        if op == "ack":
            await c.ack(self._delivery(a).ctx)
            return {}
        if op == "ack_follow_ups":
            d = self._delivery(a)
            rs = await c.ack_with_follow_ups(d.ctx, [_enqueue_request(j) for j in a["follow_ups"]])
            return {"follow_ups": [{"job_id": r.job_id, "state": str(r.state), "duplicate": r.duplicate} for r in rs]}
        if op == "nack":
            d = self._delivery(a)
            kind = a.get("directive", "default")
            if kind == "default":
                directive = RetryDirective.default()
            elif kind == "after":
                directive = RetryDirective.after(_ms(a.get("delay_ms", 0)))
            elif kind == "dead_letter":
                directive = RetryDirective.dead_letter()
            else:
                raise Mismatch(f"argument 'directive': unknown directive {kind!r}")
            return {"dead_lettered": await c.nack(d.ctx, directive, a.get("reason", ""))}
        if op == "release":
            await c.release(self._delivery(a).ctx)
            return {}
        if op == "extend_lease":
            await c.extend_lease(self._delivery(a).ctx, _ms(a["lease_ms"]))
            return {}
        if op == "get_job":
            return _job(await c.get_job(a["job_id"]))
        if op == "list_jobs":
            listed, _ = await c.list_jobs(a["queue"], state=JobState[a["state"].upper()])
            return {"jobs": [_job(j) for j in listed]}
        if op == "set_jobs_priority":
            return _actions(await c.set_jobs_priority(a["job_ids"], a["priority"]))
        if op == "run_jobs_now":
            return _actions(await c.run_jobs_now(a["job_ids"]))
        if op == "delete_jobs":
            return _actions(await c.delete_jobs(a["job_ids"]))
        if op == "reschedule_jobs":
            run_at = datetime.now(timezone.utc) + _ms(a.get("delay_ms", 0))
            return _actions(await c.reschedule_jobs(a["job_ids"], run_at))
        if op == "cancel_jobs":
            return _actions(await c.cancel_jobs(a["job_ids"], delete=a.get("delete", False),
                                                reason=a.get("reason", "")))
        if op == "dead_letter_jobs":
            return _actions(await c.dead_letter_jobs(a["job_ids"], a.get("reason", "")))
        if op == "requeue_dead_letters":
            return _actions(await c.requeue_dead_letters(a["job_ids"]))
        if op == "delete_dead_letters":
            return _actions(await c.delete_dead_letters(a["job_ids"]))
        if op == "list_dead_letters":
            records, _ = await c.list_dead_letters(a.get("queue", ""))
            return {"records": [_dead_letter(r) for r in records]}
        if op == "get_dead_letter":
            return _dead_letter(await c.get_dead_letter(a["job_id"]))
        if op == "create_queue":
            eff = await c.create_queue(a["name"], _queue_settings(a.get("settings", {})), paused=a.get("paused", False))
            return {"effective": _settings(eff)}
        if op == "update_queue":
            eff = await c.update_queue(a["name"], _queue_settings(a.get("settings", {})), inherit=a.get("inherit", []),
                                       paused=a.get("paused"))
            return {"effective": _settings(eff)}
        if op == "get_queue":
            q = await c.get_queue(a["name"])
            return {**_stats(q.stats), "settings": _settings(q.settings), "effective": _settings(q.effective)}
        if op == "list_queues":
            prefix = a.get("name_prefix", "")
            qs = sorted((q for q in await c.list_queues(tags=a.get("tag", [])) if q.name.startswith(prefix)),
                        key=lambda q: q.name)
            return {"queues": [_stats(q) for q in qs]}
        if op in ("delete_queue", "purge_queue"):
            if op == "delete_queue":
                removed = await c.delete_queue(a["name"], force=a.get("force", False))
            else:
                targets = {"waiting": PurgeTarget.WAITING, "dead_letters": PurgeTarget.DEAD_LETTERS}
                if a.get("target") not in targets:
                    raise Mismatch(f"argument 'target': want waiting or dead_letters, got {a.get('target')!r}")
                removed = await c.purge_queue(a["name"], targets[a["target"]])
            return {"jobs_removed": removed.jobs, "dead_letters_removed": removed.dead_letters}
        if op == "pause_queue":
            await c.pause_queue(a["queue"])
            return {}
        if op == "resume_queue":
            await c.resume_queue(a["queue"])
            return {}
        if op == "preview_redrive":
            return {"matching": (await c.preview_redrive(_redrive(a))).matching}
        if op == "start_redrive":
            return _task(await c.start_redrive(_redrive(a)))
        if op == "get_redrive":
            return _task(await c.get_redrive(a["id"]))
        if op == "list_redrives":
            tasks = sorted((t for t in await c.list_redrives() if t.options.selection.queue == a.get("queue", "")),
                           key=lambda t: t.id)
            return {"tasks": [_task(t) for t in tasks]}
        if op == "pause_redrive":
            return _task(await c.pause_redrive(a["id"]))
        if op == "resume_redrive":
            return _task(await c.resume_redrive(a["id"]))
        if op == "cancel_redrive":
            return _task(await c.cancel_redrive(a["id"]))
        if op == "enqueue_batch":
            # An item EnqueueRequest refuses to build (priority 12) fails in
            # its place, as the Go client's batch answers it; the rest go.
            # In a batch with dependencies it fails the whole call, naming
            # the item, as enqueue_batch does for what it refuses itself.
            whole = any(j.get("after") for j in a["jobs"])
            items: list[Optional[BatchResult]] = []
            reqs: list[EnqueueRequest] = []
            for i, j in enumerate(a["jobs"]):
                try:
                    reqs.append(_enqueue_request(j))
                    items.append(None)
                except InvalidField as e:
                    if whole:
                        raise InvalidField(f"jobs[{i}].{e.field}", e.description, e.limit, op="enqueue batch") from e
                    items.append(BatchResult(error=e))
                except SeppError as e:
                    items.append(BatchResult(error=e))
            sent = iter(await c.enqueue_batch(reqs) if reqs else [])
            return {"results": [_batch_item(r if r is not None else next(sent)) for r in items]}
        if op == "ack_batch":
            ds = [self._delivery({"job_id": i}) for i in a["job_ids"]]
            errs = await c.ack_batch([d.ctx for d in ds])
            return {"results": [{"job_id": i, "error": None if e is None else error_kind(e)}
                                for i, e in zip(a["job_ids"], errs)]}
        if op == "drain_dead_letters":
            records = await c.drain_dead_letters(a.get("queue"), max=a.get("max", 1))
            return {"records": [_dead_letter(r) for r in records]}
        if op == "create_schedule":
            interval = _ms(a["interval_ms"]) if "interval_ms" in a else None
            template = JobTemplate(a.get("queue", ""), a.get("job_type", ""), a.get("payload", "").encode())
            return _schedule(await c.create_schedule(ScheduleDefinition(
                a["name"], template, cron=a.get("cron", ""), interval=interval, time_zone=a.get("time_zone", ""),
                paused=a.get("paused", False))))
        if op == "get_schedule":
            return _schedule(await c.get_schedule(a["name"]))
        if op == "pause_schedule":
            return _schedule(await c.pause_schedule(a["name"]))
        if op == "resume_schedule":
            return _schedule(await c.resume_schedule(a["name"]))
        if op == "delete_schedule":
            await c.delete_schedule(a["name"])
            return {}
        if op == "list_schedules":
            prefix = a.get("name_prefix", "")
            ss = sorted((s for s in await c.list_schedules() if s.name.startswith(prefix)), key=lambda s: s.name)
            return {"schedules": [_schedule(s) for s in ss]}
        raise Mismatch(f"unknown op {op!r}")


async def _attempt(d: Driver, st: Step, args: dict[str, Any], expect: Any,
                   expect_err: Optional[dict[str, Any]]) -> dict[str, Any]:
    try:
        result = await d.call(st.op, args)
    except StepError as e:
        if expect_err is None:
            raise Mismatch(f"unexpected error: {e}") from e
        if e.kind != expect_err["kind"]:
            raise Mismatch(f"expected error {expect_err['kind']}, got {e}") from e
        if expect_err.get("field") and e.field != expect_err["field"]:
            raise Mismatch(f"expected error {expect_err['kind']} naming field {expect_err['field']!r}, got {e}") from e
        return {}
    if expect_err is not None:
        raise Mismatch(f"expected error {expect_err['kind']}, got result {_show(result)}")
    if expect is not None:
        match("result", expect, result)
    return result


async def run_step(d: Driver, st: Step, variables: dict[str, Any]) -> None:
    if st.expect is not None and st.error is not None:
        raise Mismatch("a step expects a result or an error, not both")
    args = substitute(st.args, variables)
    expect = substitute(st.expect, variables)
    expect_err = substitute(st.error, variables)
    deadline = time.monotonic() + st.within_ms / 1000
    while True:
        try:
            result = await _attempt(d, st, args, expect, expect_err)
        except Mismatch as e:
            if st.within_ms == 0:
                raise
            if time.monotonic() > deadline:
                raise Mismatch(f"not within {st.within_ms} ms: {e}") from e
            await asyncio.sleep(0.1)
            continue
        for name, path in st.save.items():
            variables[name] = lookup(result, path)
        return


async def run_scenario(client: SeppClient, sc: Scenario, run: str) -> None:
    """Run the steps in order; raise Mismatch naming the first that fails."""
    d = Driver(client)
    variables: dict[str, Any] = {"run": run}
    for i, st in enumerate(sc.steps, 1):
        try:
            await run_step(d, st, variables)
        except Mismatch as e:
            raise Mismatch(f"step {i} ({st.op}): {e}") from e
        except (KeyError, TypeError, ValueError) as e:
            raise Mismatch(f"step {i} ({st.op}): bad arguments: {e!r}") from e
