"""The text ``vllm-lint validate`` prints: each case's table and verdict, and the throughput ratio line."""

from __future__ import annotations

import json

from vllm_lint.reference.loadgen import LoadResult
from vllm_lint.reference.validate.results import Report, Validation


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f}"


def load_line(result: LoadResult) -> str:
    s = result.stats()
    return (f"{s['ok']}/{s['requests']} ok, {s['tokens_per_s']:.1f} tok/s, p50 {_ms(s['latency_p50_s'])} ms, "
            f"p95 {_ms(s['latency_p95_s'])} ms")


def _report_lines(report: Report) -> list[str]:
    o = report.options
    rows = [f"{'server':<7}{'ok':>9}{'tokens/s':>11}{'p50 ms':>9}{'p95 ms':>9}{'ttft p50 ms':>13}"
            f"{'ttft p95 ms':>13}{'start s':>9}"]
    for role in ("bad", "fixed"):
        s = report.main[role].stats()
        rows.append(f"{role:<7}{s['ok']:>5}/{s['requests']:<3}{s['tokens_per_s']:>11.1f}"
                    f"{_ms(s['latency_p50_s']):>9}{_ms(s['latency_p95_s']):>9}{_ms(s['ttft_p50_s']):>13}"
                    f"{_ms(s['ttft_p95_s']):>13}{report.startup_s.get(role, 0):>9.1f}")
    c, b = report.comparison, report.bad_under_load
    fixed_by = "its autofix" if o.fixed is None else o.fixed.name
    applied = ", ".join(f"{n} x {code}" for code, n in sorted(report.prepared.applied.items()))
    lines = [f"validate: {report.case.name} ({report.case.origin}) vs {fixed_by}"
             + (f" ({applied})" if applied else ""),
             f"load: {o.requests} requests, concurrency {o.concurrency}, max_tokens {o.max_tokens}, greedy, "
             f"model {o.model}; {report.endpoint.describe()}"]
    for role, notes in report.injected.items():
        for note in notes:
            lines.append(f"note: injected into the {role} file to make it runnable: {note}")
    lines += rows
    if report.sweep.get("bad"):
        lines.append("concurrency sweep (tokens/s): " + ", ".join(
            f"{lvl}: {report.sweep['bad'][lvl].stats()['tokens_per_s']:.0f} -> "
            f"{report.sweep['fixed'][lvl].stats()['tokens_per_s']:.0f}"
            for lvl in sorted(report.sweep["bad"]) if lvl in report.sweep["fixed"]))
    if b is not None and not b.passed:
        failed = sum(1 for m in b.mismatches if m.get("problem"))
        lines.append(f"note: the bad server under load: {len(report.main['bad'].ok)}/{b.compared} answered, "
                     f"{b.same_text}/{b.compared} with its own one-at-a-time text"
                     + (f" ({failed} failed)" if failed else "") + "; the fixed server is compared with its "
                     "one-at-a-time answers")
    if report.bad_fails:
        lines.append(f"note: the bad server failed every request ({report.bad_fails[:160]}); the fixed server's "
                     "answers are compared with transformers' greedy decoding of each prompt, and no response shape")
        lines.append(f"responses: {c.same_text}/{c.compared} same completion text as transformers' greedy "
                     f"decoding -> {'PASS' if c.passed else 'FAIL'}")
    else:
        lines.append(f"responses: {c.same_shape}/{c.compared} same JSON shape, {c.same_text}/{c.compared} same "
                     f"completion text as the bad server's -> {'PASS' if c.passed else 'FAIL'}")
    if report.decoding is not None:
        same, detail = report.decoding
        lines.append(f"decoding asked for: {detail} -> {'PASS' if same else 'FAIL'}")
    if report.event_loop is not None:
        lines.append(report.event_loop.line())
    st = report.stream_comparison
    if st is not None:
        s = report.streamed["fixed"].stats()
        shape = f"{st.same_shape}/{st.compared} the bad server's stream shape, " if st.shapes else ""
        lines.append(f"streamed: fixed {s['ok']}/{s['requests']} ok, {s['tokens_per_s']:.1f} tok/s, time to first "
                     f"token p50 {_ms(s['ttft_p50_s'])} ms; {shape}{st.same_text}/{st.compared} same completion "
                     f"text -> {'PASS' if st.passed else 'FAIL'}")
        for item in st.mismatches[:3]:
            lines.append(f"stream mismatch: {json.dumps(item)[:400]}")
    if c.echo_differs:
        lines.append(f"warning: {c.echo_differs} responses differ in echoing the prompt before the completion")
    for item in c.mismatches[:3]:
        lines.append(f"mismatch: {json.dumps(item)[:400]}")
    return lines


def ratio_text(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio:.2f}"


def _case_ratio_text(report: Report) -> str:
    if report.bad_fails:
        return "n/a (the bad server answers no request)"
    if report.ratio is None and report.main["fixed"].stats()["tokens_per_s"]:
        return "n/a (the bad server generated nothing under load)"
    return ratio_text(report.ratio)


def format_summary(validation: Validation) -> str:
    """Each case's table and verdict; with several, a table of all; always ending with the line
    ``fixed/bad throughput ratio: X.XX`` (the lowest of the cases)."""
    lines: list[str] = []
    for report in validation.reports:
        lines += _report_lines(report)
        if len(validation.reports) > 1:
            lines.append(f"{report.case.name}: fixed/bad throughput ratio {_case_ratio_text(report)}")
        lines.append("")
    for case, why in validation.skipped:
        lines.append(f"skipped: {case.name}: {why}")
    for case, why in validation.failed:
        lines.append(f"FAILED: {case.name}: {why.splitlines()[0] if why else ''}")
    if len(validation.reports) > 1 or validation.failed:
        lines.append(f"{'server':<34}{'bad tok/s':>10}{'fixed tok/s':>12}{'ratio':>8}  responses")
        for report in validation.reports:
            c = report.comparison
            lines.append(f"{report.case.name[:33]:<34}{report.main['bad'].stats()['tokens_per_s']:>10.1f}"
                         f"{report.main['fixed'].stats()['tokens_per_s']:>12.1f}{ratio_text(report.ratio):>8}"
                         f"  {'PASS' if report.passed else 'FAIL'} ({c.same_text}/{c.compared} same text"
                         + (f", {report.stream_comparison.same_text}/{report.stream_comparison.compared} streamed"
                            if report.stream_comparison else "")
                         + ("" if report.decoding is None else f", decoding {'same' if report.decoding[0] else 'differs'}")
                         + ("" if report.event_loop is None or report.event_loop.passed else ", event loop held")
                         + ")")
        for case, _ in validation.failed:
            lines.append(f"{case.name[:33]:<34}{'-':>10}{'-':>12}{'-':>8}  FAIL (did not run)")
        lines.append(f"{len(validation.reports)} servers validated, {len(validation.failed)} failed to run, "
                     f"{len(validation.skipped)} skipped -> {'PASS' if validation.passed else 'FAIL'}; "
                     "the ratio below is the lowest")
    while lines and not lines[-1]:
        lines.pop()
    lines.append(f"fixed/bad throughput ratio: {ratio_text(validation.ratio)}")
    return "\n".join(lines)
