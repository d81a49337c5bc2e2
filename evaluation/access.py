"""Object-level access to benchmarks and dialogues: every view goes through these.

Strangers get 404 (the object's existence is not revealed); users who may read but not write
get 403 on writes. Hidden-split dialogues carry gold answers, so only staff and the
benchmark's owner may open them — and only they see unit-level scores of hidden dialogues.
An evaluation run is visible to staff, to the owner of the evaluated system, and to everyone
who can see the benchmark once the submission is public.
"""

from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404

from .models import Arena, Battle, Benchmark, Dialogue, Item, Job, Run, Simulation, Split
from .rows import battle_with_systems


def benchmarks_for_user(user) -> QuerySet[Benchmark]:
    if user.is_staff:
        return Benchmark.objects.all()
    if user.is_authenticated:
        return Benchmark.objects.filter(Q(is_public=True) | Q(owner=user))
    return Benchmark.objects.filter(is_public=True)


def arenas_for_user(user) -> QuerySet[Arena]:
    """Arenas whose benchmark the viewer may see; an arena without a benchmark is public."""
    return Arena.objects.filter(Q(benchmark__isnull=True)
                                | Q(benchmark__in=benchmarks_for_user(user)))


def can_manage_benchmark(user, benchmark: Benchmark) -> bool:
    return user.is_staff or (user.is_authenticated and benchmark.owner_id == user.pk)


def get_benchmark_for_user(user, slug: str, *, write: bool = False) -> Benchmark:
    benchmark = benchmarks_for_user(user).filter(slug=slug).first()
    if benchmark is None:
        raise Http404("No such benchmark.")
    if write and not can_manage_benchmark(user, benchmark):
        raise PermissionDenied("Only the benchmark's owner (or staff) can change it.")
    return benchmark


def get_dialogue_for_user(user, benchmark: Benchmark, external_id: str) -> Dialogue:
    dialogue = benchmark.dialogues.filter(external_id=external_id).first()
    if dialogue is None:
        raise Http404("No such dialogue.")
    if dialogue.split == Split.HIDDEN and not can_manage_benchmark(user, benchmark):
        raise Http404("No such dialogue.")
    return dialogue


def get_item_for_user(user, benchmark: Benchmark, external_id: str) -> Item:
    item = benchmark.items.filter(external_id=external_id).first()
    if item is None:
        raise Http404("No such item.")
    return item


def get_job_for_user(user, job_id: int) -> Job:
    """Jobs are private to whoever started them (and staff)."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None or not user.is_authenticated:
        raise Http404("No such job.")
    if not (user.is_staff or job.created_by_id == user.pk):
        raise Http404("No such job.")
    return job


def get_staged_upload_for_user(user, job_id: int) -> Job:
    """A large upload waiting for (or done with) its worker's check: only its uploader and
    staff see its status and report; 404 for everyone else, and for jobs of other kinds."""
    job = get_job_for_user(user, job_id)
    if job.kind != Job.Kind.SUBMISSION_VALIDATION:
        raise Http404("No such upload.")
    return job


def simulations_for_user(user) -> QuerySet[Simulation]:
    """Simulations in progress are private like jobs: whoever started one, the simulated
    system's owner, and staff (a finished one's run is shown like any run, `runs_for_user`)."""
    simulations = Simulation.objects.select_related("job", "system", "benchmark", "run",
                                                    "submission")
    if user.is_staff:
        return simulations
    if not user.is_authenticated:
        return simulations.none()
    return simulations.filter(Q(created_by=user) | Q(system__owner=user))


def get_simulation_for_user(user, simulation_id: int) -> Simulation:
    """A simulation USER started or whose system USER owns (or staff): 404 for everyone else;
    they may also cancel it."""
    simulation = simulations_for_user(user).filter(pk=simulation_id).first()
    if simulation is None:
        raise Http404("No such simulation.")
    return simulation


def runs_for_user(user) -> QuerySet[Run]:
    runs = Run.objects.select_related("submission__system", "submission__benchmark", "job")
    if user.is_staff:
        return runs
    public = Q(submission__is_public=True,
               submission__benchmark__in=benchmarks_for_user(user))
    if user.is_authenticated:
        return runs.filter(public | Q(submission__system__owner=user))
    return runs.filter(public)


def get_run_for_user(user, run_id: int, *, write: bool = False) -> Run:
    """A run the user may see (404 otherwise); with WRITE (retry), its system's owner or
    staff (403 for other viewers of a public run)."""
    run = runs_for_user(user).filter(pk=run_id).first()
    if run is None:
        raise Http404("No such run.")
    if write and not can_write_run(user, run):
        raise PermissionDenied("Only the system's owner (or staff) can retry its runs; you may "
                               "read this one because its submission is public.")
    return run


def can_write_run(user, run: Run) -> bool:
    return user.is_staff or (user.is_authenticated and run.submission.system.owner_id == user.pk)


def can_see_hidden_units(user, run: Run) -> bool:
    """Unit-level values of hidden dialogues reveal their gold: staff and the benchmark owner."""
    return can_manage_benchmark(user, run.submission.benchmark)


def can_see_simulation_hidden(user, simulation) -> set[str] | None:
    """The simulated users (opaque ids) whose hidden targets and preferences USER may read,
    None for all.

    The system's owner (and staff) see them once the run succeeded; targets taken from
    hidden-split dialogues only when USER may also manage the benchmark (they are its gold)
    or once the benchmark released them.
    """
    if not user.is_authenticated or not simulation.job.status == Job.Status.SUCCEEDED:
        return set()
    if not (user.is_staff or simulation.system.owner_id == user.pk):
        return set()
    if (can_manage_benchmark(user, simulation.benchmark)
            or simulation.benchmark.hidden_released_at is not None):
        return None
    hidden = Dialogue.objects.filter(benchmark=simulation.benchmark, split=Split.HIDDEN)
    return set(simulation.dialogues.exclude(
        source_dialogue_id__in=hidden.values("external_id")).values_list("user_id", flat=True))


def get_battle_for_request(request, battle_uuid) -> Battle:
    """The arena battle of this browser session (or of this logged-in user); 404 for anyone
    else, so a battle's address is no use to a stranger. The session remembers its battles
    (`arena_battles`), so logging in, which gives the session a new key, keeps them."""
    battle = battle_with_systems(battle_uuid)  # one hand-written statement (evaluation/rows.py)
    session_key = request.session.session_key
    if battle is None or not (
            (session_key and battle.session_key == session_key)
            or str(battle.uuid) in request.session.get("arena_battles", ())
            or (request.user.is_authenticated and battle.user_id == request.user.pk)):
        raise Http404("No such battle.")
    return battle
