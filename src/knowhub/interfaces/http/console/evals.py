"""The console's evaluation page: the reports ``knowhub eval`` wrote, of the collections the
caller may read, with a bar chart per metric — retrieval runs, and answer runs
(``knowhub eval --answers``) beside them, each kind with its own metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from knowhub.caller import Caller
from knowhub.errors import ConfigError
from knowhub.eval.report import load_report
from knowhub.interfaces.http.console.charts import metric_groups, run_label
from knowhub.interfaces.http.console.pages import gathered, pages_router
from knowhub.interfaces.http.deps import PrincipalDep, ServiceDep

__all__ = ["evals", "router"]

router = pages_router()


@router.get("/evals")
async def evals(request: Request, service: ServiceDep, principal: PrincipalDep) -> Response:
    folder = Path(service.settings.data_dir) / "eval" / "reports"

    def gather(principal: Caller) -> dict[str, Any]:
        reports, problems = _reports(folder)
        runs = service.app_for(principal).visible(reports, lambda r: str(r.get("collection", "")))
        runs.sort(key=lambda r: str(r.get("created", "")))
        answers = [run for run in runs if run.get("kind") == "answers"]
        retrieval = [run for run in runs if run.get("kind") != "answers"]
        return {
            "runs": retrieval,
            "groups": metric_groups(retrieval),
            "answer_runs": answers,
            "answer_groups": metric_groups(answers),
            "problems": problems,
            "folder": folder.absolute(),
        }

    return await gathered(request, service, principal, "evals.html", gather)


def _reports(folder: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Every report under ``folder`` (with its folder's name and a label), and the problems
    of those that could not be read."""
    reports, problems = [], []
    for path in sorted(folder.glob("*/report.json")):
        try:
            report = load_report(path)
        except ConfigError as exc:  # one broken report is listed, the others still shown
            problems.append(str(exc))
            continue
        reports.append({**report, "folder": path.parent.name, "label": run_label(report)})
    return reports, problems
