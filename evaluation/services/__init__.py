"""Writes of the evaluation app: benchmarks, systems, submissions, jobs and runs."""
