from django.core.management.base import BaseCommand, CommandError

from evaluation.lib.demo import generate_demo_bundle
from evaluation.lib.formats.bundle import Bundle, write_bundle


class Command(BaseCommand):
    help = "Generate the demo tourism benchmark bundle, deterministically from a seed."

    def add_arguments(self, parser):
        parser.add_argument("directory")
        parser.add_argument("--seed", type=int, default=42)
        parser.add_argument("--dialogues", type=int, default=None, metavar="N",
                            help="exactly N dialogues over the demo's catalogue (a scale "
                                 "benchmark with slug demo-tourism-N; default: the demo's 360)")

    def handle(self, directory, seed, dialogues, **options):
        if dialogues is not None and dialogues < 1:
            raise CommandError("--dialogues must be at least 1")
        data = generate_demo_bundle(seed=seed, dialogues=dialogues)
        write_bundle(Bundle(**data), directory)
        self.stdout.write(self.style.SUCCESS(
            f"Wrote {data['benchmark']['slug']} (seed {seed}) to {directory}: "
            f"{len(data['items'])} items, {len(data['reviews'])} reviews, "
            f"{len(data['dialogues'])} dialogues."
        ))
