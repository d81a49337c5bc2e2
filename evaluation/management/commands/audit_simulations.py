"""`manage.py audit_simulations`: the leakage audit of finished simulations (docs/simulation.md,
"Leakage audit") for those that finished before it existed (or, with --all, again): each
dialogue's flags, the simulation's share of leaked dialogues and its sanitised (-Both) run,
then the simulated boards' ranks are refreshed."""

from django.core.management.base import BaseCommand
from django.db import transaction

from evaluation.lib.simulators.simulators import simulated_protocol
from evaluation.models import Simulation
from evaluation.services.simulations import simulation_audit_store
from evaluation.signals import results_changed_notify


class Command(BaseCommand):
    help = "Audit finished simulations for target leakage and store their sanitised runs."

    def add_arguments(self, parser):
        parser.add_argument("--all", action="store_true", dest="again",
                            help="audit every finished simulation again, not only unaudited")
        parser.add_argument("--benchmark", default="", help="only this benchmark's (slug)")

    def handle(self, *, again, benchmark, **options):
        finished = Simulation.objects.filter(run__isnull=False).select_related("benchmark")
        if benchmark:
            finished = finished.filter(benchmark__slug=benchmark)
        todo = [s for s in finished.order_by("pk")
                if again or "leakage" not in (s.report or {})]
        boards = set()
        for n, simulation in enumerate(todo, start=1):
            with transaction.atomic():
                simulation_audit_store(simulation=simulation)
            summary = simulation.report["leakage"]
            boards.add((simulation.benchmark_id, simulated_protocol(simulation.simulator)))
            self.stdout.write(f"[{n}/{len(todo)}] simulation #{simulation.pk}: "
                              f"{summary['leaked']} of {summary['dialogues']} dialogues leaked; "
                              f"sanitised run #{simulation.sanitised_run_id}")
        for benchmark_id, protocol in sorted(boards):
            results_changed_notify(benchmark_id=benchmark_id, protocol=protocol)
        self.stdout.write(f"{len(todo)} simulation{'s' if len(todo) != 1 else ''} audited.")
