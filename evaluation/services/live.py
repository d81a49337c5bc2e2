"""Writes and clients for live systems (docs/formats.md §4).

`system_set_live` makes a system live (an HTTP endpoint, checked against
`CONCORD_LIVE_ALLOWED_HOSTS`, or an in-process baseline); `live_baselines_ensure` registers
Concord's nine reference baselines as in-process live systems; `live_client` gives the object a
simulation (or an arena) calls once per turn: `client.turn(LiveRequest) -> LiveAnswer`, raising
`LiveCallError`. The API key is read from the environment at call time, never stored.
"""

import os

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from evaluation.lib.live.client import HttpLiveSystem, LiveSettings
from evaluation.lib.live.hosts import EndpointRefused, resolve_allowed
from evaluation.lib.live.inprocess import adapters, inprocess_system
from evaluation.lib.rankers import Catalogue
from evaluation.models import Benchmark, System
from evaluation.selectors.benchmarks import benchmark_bundle
from evaluation.services.llm_runs import llm_gateway, model_config, model_options
from evaluation.services.submissions import system_create, system_get_or_create_baseline

LIVE_FIELDS = ("live_kind", "live_endpoint", "live_adapter", "live_api_key_env",
               "live_timeout_seconds", "live_max_retries", "live_backoff_seconds",
               "live_max_concurrency")


def endpoint_check(url: str) -> None:
    """ValidationError (on `live_endpoint`) when Concord may not call URL."""
    try:
        resolve_allowed(url, settings.LIVE_ALLOWED_HOSTS,
                        loopback_ports=settings.LIVE_LOOPBACK_PORTS)
    except EndpointRefused as error:
        raise ValidationError({"live_endpoint": str(error)}) from None


def system_set_live(*, system: System, endpoint: str = "", adapter: str = "",
                    api_key_env: str = "", timeout_seconds: float = 30.0, max_retries: int = 2,
                    backoff_seconds: float = 0.5, max_concurrency: int = 4) -> System:
    """Make SYSTEM live: an HTTP ENDPOINT or an in-process ADAPTER (exactly one)."""
    if bool(endpoint) == bool(adapter):
        raise ValidationError("give either an endpoint URL or an in-process adapter")
    if adapter:
        known = {a.key for a in adapters()}
        if adapter not in known:
            raise ValidationError({"live_adapter": f"unknown in-process system {adapter!r} "
                                                   f"(choose from {', '.join(sorted(known))})"})
    else:
        endpoint_check(endpoint)
    system.live_kind = System.LiveKind.INPROCESS if adapter else System.LiveKind.HTTP
    system.live_endpoint, system.live_adapter = endpoint, adapter
    system.live_api_key_env = api_key_env
    system.live_timeout_seconds, system.live_max_retries = timeout_seconds, max_retries
    system.live_backoff_seconds, system.live_max_concurrency = backoff_seconds, max_concurrency
    system.full_clean(exclude=["slug", "owner"])
    system.save(update_fields=list(LIVE_FIELDS))
    return system


@transaction.atomic
def live_system_create(*, name: str, owner, endpoint: str, description: str = "",
                       **call_settings) -> System:
    """A researcher's new live system behind ENDPOINT; nothing is stored when it is refused."""
    endpoint_check(endpoint)
    system = system_create(name=name, owner=owner, description=description)
    return system_set_live(system=system, endpoint=endpoint, **call_settings)


def live_baselines_ensure() -> list[System]:
    """Concord's seven rankers and two LLM baselines, each a live in-process system (slug
    `baseline-<key>`: the rankers' systems are the ones their Trace submissions belong to)."""
    systems = []
    for info in adapters():
        system = system_get_or_create_baseline(
            key=info.key, name=info.name + (" (live)" if info.needs_llm else ""),
            family=info.family, description=info.description)
        if system.live_kind != System.LiveKind.INPROCESS or system.live_adapter != info.key:
            system = system_set_live(system=system, adapter=info.key, timeout_seconds=120.0)
        systems.append(system)
    return systems


def live_client(*, system: System, benchmark: Benchmark, model: dict | None = None,
                catalogue: Catalogue | None = None, meter=None):
    """What a simulation calls for SYSTEM on BENCHMARK: `.turn(LiveRequest) -> LiveAnswer`.

    MODEL (a `model_options` entry) is the LLM of an in-process LLM baseline; default: the
    configured one. Raises ValidationError when the system is not live or its key is missing.
    """
    if not system.is_live:
        raise ValidationError(f"system {system.slug!r} is not a live system")
    if catalogue is None:
        bundle = benchmark_bundle(benchmark=benchmark)
        catalogue = Catalogue.from_records(bundle.items, bundle.reviews)
    if system.live_kind == System.LiveKind.INPROCESS:
        info = {a.key: a for a in adapters()}[system.live_adapter]
        if not info.needs_llm:
            return inprocess_system(system.live_adapter, catalogue)
        return inprocess_system(system.live_adapter, catalogue, gateway=llm_gateway(),
                                config=model_config(model or model_options()), meter=meter)
    api_key = None
    if system.live_api_key_env:
        api_key = os.environ.get(system.live_api_key_env)
        if not api_key:
            raise ValidationError(f"the key of system {system.slug!r} is read from the "
                                  f"environment variable {system.live_api_key_env}, which is "
                                  "not set on this machine")
    return HttpLiveSystem(
        system.live_endpoint, allowed_hosts=settings.LIVE_ALLOWED_HOSTS,
        loopback_ports=settings.LIVE_LOOPBACK_PORTS,
        item_ids=catalogue.items, review_ids=catalogue.review_ids, api_key=api_key,
        settings=LiveSettings(timeout_seconds=system.live_timeout_seconds,
                              max_retries=system.live_max_retries,
                              backoff_seconds=system.live_backoff_seconds,
                              max_concurrency=system.live_max_concurrency))
