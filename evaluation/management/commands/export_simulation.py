"""`manage.py export_simulation RUN DIR`: a simulation run's dialogues as `DIR/dialogues.jsonl`
(one line per simulated user: its `target_item_ids`, its `turns` in the bundle's turn format,
each system turn with the `ranked_item_ids` it showed, the general `preferences` its simulator
prepared before the dialogue, the per-turn `reflections`, iEvaLM's `persuasiveness`, and its
`leakage` audit's flags) and `DIR/report.json` (the metrics, the leakage summary and the users'
behaviour)."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluation.models import Simulation


class Command(BaseCommand):
    help = "Export a simulation run's dialogues (dialogues.jsonl) and report (report.json)."

    def add_arguments(self, parser):
        parser.add_argument("run", type=int, help="the simulation's run id")
        parser.add_argument("dir", help="output folder (created)")

    def handle(self, *, run, dir, **options):
        simulation = Simulation.objects.filter(run_id=run).first()
        if simulation is None:
            raise CommandError(f"run {run} is not a finished simulation")
        folder = Path(dir)
        folder.mkdir(parents=True, exist_ok=True)
        lines = [json.dumps({"user_id": d.user_id, "target_item_ids": d.target_item_ids,
                             "turns": d.turns, "leakage": d.leakage,
                             "preferences": (d.hidden or {}).get("preferences", {}),
                             "reflections": (d.hidden or {}).get("reflections", []),
                             **({"persuasiveness": d.hidden["persuasiveness"]}
                                if "persuasiveness" in (d.hidden or {}) else {})},
                            ensure_ascii=False)
                 for d in simulation.dialogues.filter(status="ok").order_by("position")]
        (folder / "dialogues.jsonl").write_text("".join(line + "\n" for line in lines),
                                                encoding="utf-8")
        (folder / "report.json").write_text(
            json.dumps({"config": simulation.config, **simulation.report}, indent=2,
                       ensure_ascii=False) + "\n", encoding="utf-8")
        self.stdout.write(f"wrote {len(lines)} dialogues to {folder / 'dialogues.jsonl'}")
