"""``vllm-lint validate --plot``: tokens/s against concurrency, drawn with matplotlib."""

from __future__ import annotations

from pathlib import Path

from vllm_lint.reference.validate.errors import ValidationError
from vllm_lint.reference.validate.results import Validation
from vllm_lint.reference.validate.summary import ratio_text


def write_plot(validation: Validation, path: Path) -> None:
    """Tokens/s against concurrency for both servers: one panel per validated server."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    reports = validation.reports
    if not reports:
        raise ValidationError("nothing to plot: no server was validated")
    columns = min(3, len(reports))
    rows = (len(reports) + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(6.4 * columns, 4.2 * rows), dpi=110, squeeze=False)
    for ax in axes.flat[len(reports):]:
        ax.set_visible(False)
    o = validation.options
    for ax, report in zip(axes.flat, reports):
        for role, style in (("bad", "o-"), ("fixed", "s-")):
            levels = sorted(report.sweep.get(role, {}))
            if not levels:
                levels, values = [o.concurrency], [report.main[role].stats()["tokens_per_s"]]
            else:
                values = [report.sweep[role][lvl].stats()["tokens_per_s"] for lvl in levels]
            label = "bad (as written)" if role == "bad" else "fixed (vllm-lint --fix --unsafe-fixes)"
            ax.plot(levels, values, style, label=label)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(set(o.sweep) | {o.concurrency}))
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.set_xlabel("concurrent requests")
        ax.set_ylabel("generated tokens / s")
        ax.set_title(f"{report.case.name}: ratio {ratio_text(report.ratio)} at {o.concurrency}", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"vllm-lint validate: throughput, max_tokens={o.max_tokens}, greedy, model {o.model.name}",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
