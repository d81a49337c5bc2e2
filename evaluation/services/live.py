"""Writes and clients for live systems (docs/formats.md §4).

`system_set_live` makes a system live (an HTTP endpoint, checked against
`CONCORD_LIVE_ALLOWED_HOSTS`, or an in-process baseline); `live_baselines_ensure` registers
Concord's nine reference baselines as in-process live systems; `live_client` gives the object a
simulation (or an arena) calls once per turn: `client.turn(LiveRequest) -> LiveAnswer`, raising
`LiveCallError`. A system stores the name of one of the operator's credentials
(`evaluation.services.credentials`), never a key or a variable; the key is read at call time.
"""

import logging

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError, transaction

from evaluation.lib.deadlines import BoundedPool
from evaluation.lib.live.client import HttpLiveSystem, LiveSettings
from evaluation.lib.live.hosts import EndpointRefused, resolve_allowed
from evaluation.lib.live.inprocess import Deadlined, adapters, inprocess_system
from evaluation.lib.rankers import Catalogue
from evaluation.lib.rankers.embeddings import EmbeddingsUnavailable, shared_encoder
from evaluation.models import Benchmark, System
from evaluation.selectors.benchmarks import benchmark_bundle
from evaluation.services.credentials import credential_check, credential_secret
from evaluation.services.llm_models import llm_gateway, model_config, model_options
from evaluation.services.submissions import system_create, system_get_or_create_baseline

# The threads in-process baselines answer on (this process's; their callers wait at most the
# system's timeout, so stuck calls hold at most this many threads).
INPROCESS_POOL = BoundedPool(settings.LIVE_INPROCESS_THREADS, "inprocess-call")

# The in-process baselines that need the sentence-embedding model (Dense, and Hybrid-RRF's
# dense signal): loading it took minutes on a busy machine, in the first call's time.
ENCODER_ADAPTERS = ("dense", "hybrid-rrf")

logger = logging.getLogger(__name__)

LIVE_FIELDS = ("live_kind", "live_endpoint", "live_adapter", "live_credential",
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
                    credential: str = "", timeout_seconds: float = 30.0, max_retries: int = 2,
                    backoff_seconds: float = 0.5, max_concurrency: int = 4) -> System:
    """Make SYSTEM live: an HTTP ENDPOINT or an in-process ADAPTER (exactly one). CREDENTIAL
    is a name the operator offers to SYSTEM's owner (CONCORD_CREDENTIALS), or empty."""
    if bool(endpoint) == bool(adapter):
        raise ValidationError("give either an endpoint URL or an in-process adapter")
    if adapter and credential:
        raise ValidationError({"live_credential": "an in-process baseline takes no credential"})
    credential_check(credential, owner=system.owner)
    if adapter:
        known = {a.key for a in adapters()}
        if adapter not in known:
            raise ValidationError({"live_adapter": f"unknown in-process system {adapter!r} "
                                                   f"(choose from {', '.join(sorted(known))})"})
    else:
        endpoint_check(endpoint)
    system.live_kind = System.LiveKind.INPROCESS if adapter else System.LiveKind.HTTP
    system.live_endpoint, system.live_adapter = endpoint, adapter
    system.live_credential = credential
    system.live_timeout_seconds, system.live_max_retries = timeout_seconds, max_retries
    system.live_backoff_seconds, system.live_max_concurrency = backoff_seconds, max_concurrency
    system.full_clean(exclude=["slug", "owner"])
    system.save(update_fields=list(LIVE_FIELDS))
    return system


@transaction.atomic
def live_system_create(*, name: str, owner, endpoint: str, description: str = "",
                       details: dict | None = None, **call_settings) -> System:
    """A researcher's new live system behind ENDPOINT (DETAILS: its other public fields: team,
    family, links); nothing is stored when the endpoint or the credential is refused."""
    endpoint_check(endpoint)
    credential_check(call_settings.get("credential", ""), owner=owner)
    system = system_create(name=name, owner=owner, description=description, **(details or {}))
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
    configured one. Raises ValidationError when the system is not live, or its credential is
    not one the operator offers its owner or is not set here (and then nothing is sent).
    """
    if not system.is_live:
        raise ValidationError(f"system {system.slug!r} is not a live system")
    if catalogue is None:
        bundle = benchmark_bundle(benchmark=benchmark)
        catalogue = Catalogue.from_records(bundle.items, bundle.reviews)
    if system.live_kind == System.LiveKind.INPROCESS:
        info = {a.key: a for a in adapters()}[system.live_adapter]
        if not info.needs_llm:
            inner = inprocess_system(system.live_adapter, catalogue)
        else:
            inner = inprocess_system(system.live_adapter, catalogue, gateway=llm_gateway(),
                                     config=model_config(model or model_options()), meter=meter)
        return Deadlined(inner, timeout_seconds=system.live_timeout_seconds, pool=INPROCESS_POOL)
    api_key = _credential_secret(system) if system.live_credential else None
    return HttpLiveSystem(
        system.live_endpoint, allowed_hosts=settings.LIVE_ALLOWED_HOSTS,
        loopback_ports=settings.LIVE_LOOPBACK_PORTS,
        item_ids=catalogue.items, review_ids=catalogue.review_ids, api_key=api_key,
        settings=LiveSettings(timeout_seconds=system.live_timeout_seconds,
                              max_retries=system.live_max_retries,
                              backoff_seconds=system.live_backoff_seconds,
                              max_concurrency=system.live_max_concurrency))


def _credential_secret(system: System) -> str:
    """The key SYSTEM's credential stands for; ValidationError naming the system otherwise."""
    try:
        return credential_secret(system.live_credential, owner=system.owner)
    except ValidationError as error:
        raise ValidationError(f"system {system.slug!r}: {'; '.join(error.messages)}") from None


def live_warm_up() -> str:
    """Load the in-process baselines' sentence-embedding model now, when a live system needs it
    and `CONCORD_LIVE_WARM_UP` is on: a web process (config.wsgi.warm_up) or a worker process
    (config.celery) does this as it starts, so the first battle or simulation does not wait
    for it. What happened, for the log."""
    if not settings.LIVE_WARM_UP:
        return "off"
    try:
        needed = System.objects.filter(live_kind=System.LiveKind.INPROCESS,
                                       live_adapter__in=ENCODER_ADAPTERS).exists()
    except DatabaseError:  # not migrated yet: nothing can be live
        return "no database"
    if not needed:
        return "not needed"
    try:
        shared_encoder().model  # noqa: B018 (loading is the point)
    except EmbeddingsUnavailable as error:
        logger.warning("in-process baselines not warmed: %s", error)
        return f"unavailable: {error}"
    return "loaded"
