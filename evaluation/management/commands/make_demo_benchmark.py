from django.core.management.base import BaseCommand

from evaluation.lib.demo import generate_demo_bundle
from evaluation.lib.formats.bundle import Bundle, write_bundle


class Command(BaseCommand):
    help = "Generate the demo tourism benchmark bundle, deterministically from a seed."

    def add_arguments(self, parser):
        parser.add_argument("directory")
        parser.add_argument("--seed", type=int, default=42)

    def handle(self, directory, seed, **options):
        data = generate_demo_bundle(seed=seed)
        write_bundle(Bundle(**data), directory)
        self.stdout.write(self.style.SUCCESS(
            f"Wrote demo bundle (seed {seed}) to {directory}: {len(data['items'])} items, "
            f"{len(data['reviews'])} reviews, {len(data['dialogues'])} dialogues."
        ))
