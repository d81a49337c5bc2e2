"""The data model, one module per domain (docs/architecture.md, "The data model").

- `benchmarks`: benchmarks as in formats.md §1, their items, reviews, reference dialogues,
  turns and citations;
- `systems`: systems, their submissions (formats.md §2), runs, chunks and scores;
- `jobs`: background jobs and their progress;
- `llm`: the LLM response cache, CoRE's debate turns, FACE's particles and optimisations, the
  LLM spending ledger and its accounts;
- `simulations`: simulated users talking to live systems;
- `arena`: battles between live systems, their votes, and researchers' requests to join;
- `auto_evaluation`: the LLM evaluators an operator runs on new uploads.

Callers import from here (`from evaluation.models import Benchmark`).
"""

from evaluation.models.arena import Arena, ArenaRequest, Battle, BattleTurn, Vote  # noqa: F401
from evaluation.models.auto_evaluation import AutoEvaluation, AutoEvaluator  # noqa: F401
from evaluation.models.benchmarks import (  # noqa: F401
    BENCHMARK_FIELDS,
    EVALUATED_ACTIONS,
    ITEM_FIELDS,
    Action,
    Benchmark,
    Citation,
    Dialogue,
    DialogueItem,
    Item,
    Review,
    Split,
    Turn,
    TurnItem,
)
from evaluation.models.jobs import Job  # noqa: F401
from evaluation.models.llm import (  # noqa: F401
    DebateTurn,
    FaceInstruction,
    FaceOptimization,
    FaceTurn,
    LLMBudgetAccount,
    LLMCacheEntry,
    LLMSpend,
)
from evaluation.models.simulations import (  # noqa: F401
    SimulatedDialogue,
    SimulatedUserProfile,
    Simulation,
)
from evaluation.models.systems import (  # noqa: F401
    LiveKind,
    MetricSummary,
    Run,
    RunChunk,
    Submission,
    System,
    UnitScore,
    mean_interval_version,
    submission_upload_path,
)
