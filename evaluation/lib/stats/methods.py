"""One-paragraph method texts for every statistic (spec: statistics.md "Exports"; the long form
is docs/statistics.md).

Each key is the ``method`` string that the statistics functions put on their results
(``Estimate.method``, ``Correlation.method``, ``PairedTest.method``), so an export can print, next
to every number, how it was computed.
"""

from __future__ import annotations

from evaluation.lib.stats.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED

# Only the arena's ratings use a bootstrap (evaluation/lib/stats/arena.py, n_resamples and seed
# defaulting to these constants); the texts are built from the same constants.
_BOOTSTRAP = (
    f"The 95% interval is a percentile bootstrap: B = {DEFAULT_RESAMPLES:,} resamples with "
    f"replacement drawn from a fixed seed ({DEFAULT_SEED}), reading the 2.5th and 97.5th "
    "percentiles with linear interpolation."
)
# The draws of the study report's sample-efficiency curve (annotation/lib/reports.py uses it).
SAMPLE_EFFICIENCY_REPEATS = 100

METHOD_DESCRIPTIONS: dict[str, str] = {
    "krippendorff_alpha": (
        "Krippendorff's alpha = 1 − D_o / D_e, where D_o is the mean disagreement between two "
        "values given to the same unit and D_e the mean disagreement between any two values. "
        "Only pairable values count (units rated by at least two annotators); missing ratings "
        "are allowed. Disagreement is a level-specific distance: nominal (0 if equal, else 1), "
        "ordinal (squared distance in cumulative value frequencies), interval (squared "
        "difference), ratio (squared difference over sum), or MASI for sets of labels. n gives "
        "pairable units, annotators and pairable values. Undefined with fewer than two "
        "annotators, no pairable values, or no variation. The 95% interval is a studentized "
        "jackknife over units: alpha is recomputed without each unit rated by two or more "
        "annotators (in 200 groups of units when there are more), on the scale "
        "z = −2/√(m(m − 1)) artanh(√((m − 1)(1 − α)/m)), m the mean number of values per unit "
        "(slope 1 / ((1 + (m − 1)α)√(1 − α))), and the interval is z ± t(G − 1) × the "
        "jackknife standard error, mapped back (capped at 1). No random draws. Nominal fields "
        "get other intervals. A yes/no field whose every unit has two values gets a "
        "profile-likelihood interval for the intraclass correlation under the extended "
        "beta-binomial (saturated for pairs): every ρ whose log-likelihood, maximised over the "
        "share of yes answers, is within t(n − 1)² / 2 of the maximum, n the units rated twice; "
        "it reaches 1 when every pair agrees. Any other yes/no field, and a field of three or "
        "more categories on fewer than 20 pairable units, gets a test-inversion interval: every "
        "ρ₀ at which the observed alpha lies in neither 2.5% tail (mid-p) of alpha's "
        "distribution over 4,000 studies simulated on the same units from the extended "
        "Dirichlet-multinomial (the beta-binomial for two categories) at ρ₀ and the "
        "maximum-likelihood category shares at ρ₀ (seed 42), while its units can split among "
        "the categories in at most 2,000 ways. Other nominal fields take the jackknife, with no "
        "interval for fewer than 6 pairable values outside the most frequent category (too few "
        "values of the rarer categories: there the interval was too short) or for annotators "
        "who agree on every unit."
    ),
    "masi_distance": (
        "MASI distance between two label sets (e.g. two answers to the error checklist): "
        "1 − Jaccard × m, where Jaccard = |A∩B| / |A∪B| and m = 1 for identical sets, 0.67 when "
        "one contains the other, 0.33 when they overlap otherwise and 0 when disjoint "
        '(Passonneau 2006, as in NLTK). It is the distance used by alpha at level "masi".'
    ),
    "leave_one_annotator_out": (
        "Krippendorff's alpha of each field recomputed without one annotator (or a pair), with "
        "the mean over fields. Pairs are listed by the mean alpha after removing them, highest "
        "first, so the pairs that lower agreement most come first. A diagnostic only: headline "
        "agreement uses every annotator."
    ),
    "annotator_diagnostics": (
        "Per annotator: mean rating per scale; mean absolute deviation between the annotator's "
        "rating and the mean of the other annotators on the same item; flag rate (share of "
        "answered checklists with at least one error category; 'No errors' is not a category); "
        "mean number of error categories ticked; gold accuracy (share of gold items answered "
        "as expected)."
    ),
    "pairwise_pearson": (
        "Pearson's r between every pair of annotators on the units both rated, averaged over "
        "the pairs (FACE style). Pairs with fewer than three shared units or a constant rating "
        "are skipped; n counts the pairs used and skipped."
    ),
    "pairwise_spearman": (
        "Spearman's rho between every pair of annotators on the units both rated, averaged "
        "over the pairs (FACE style); same pair rules as the pairwise Pearson."
    ),
    "cohen_kappa": (
        "Cohen's kappa between two annotators (scikit-learn): (p_o − p_e) / (1 − p_e), "
        "observed agreement corrected by the agreement expected from each annotator's label "
        "frequencies; optionally linear or quadratic weights. Items missing for either "
        "annotator are dropped. Undefined when fewer than two items remain or only one label "
        "was ever used."
    ),
    "quadratic_weighted_kappa": (
        "Cohen's kappa with quadratic weights (scikit-learn cohen_kappa_score, "
        "weights='quadratic'): disagreements cost the squared distance between the two scale "
        "points, so near misses count less. Used to compare an LLM judge's factor scores with "
        "human scores on the same scale (CoRE) and to choose the best judge per factor."
    ),
    "majority_vote": (
        "The most frequent label per item; when the top count is shared the item is a tie, "
        "reported in the tie count (and, for citations, resolved to Partial)."
    ),
    "citation_precision": (
        "Per system: each quoted span gets the majority label of its annotators (Supported, "
        "Partial, Not supported; a tie counts as Partial, the guidelines' answer when unsure); "
        "precision = Supported quotes / all quotes, e.g. 40 / 44 = 0.909. Partial counts "
        "against precision. When quotes carry their dialogue (the study report), the 95% CI "
        "is the studentized cluster interval over dialogues on the logit scale, as for "
        "cluster_t_logit_mean: the share is recomputed without each dialogue in turn, and the "
        "interval is expit(logit(p) ± t × SE / (p(1 − p))) with SE the jackknife standard "
        "error; no random draws. Without dialogues there is no interval."
    ),
    "mean_pairwise_jaccard": (
        "Blind recommendation: for every pair of annotators on the same dialogue, the Jaccard "
        "index |A∩B| / |A∪B| of their selected item sets, averaged over all pairs of all "
        "dialogues; n counts the pairs."
    ),
    "strict_majority_share": (
        "Blind recommendation: share of dialogues where at least one item was picked by more "
        "than half of the dialogue's annotators."
    ),
    "majority_gold_agreement": (
        "Blind recommendation: among dialogues with a strict-majority pick and a gold answer, "
        "the share whose most-picked item is a gold (or accepted alternative) item."
    ),
    "pearson": (
        "Pearson's r (scipy.stats.pearsonr) between two score lists joined on their shared "
        "units, with a two-sided p-value. Undefined with fewer than three shared units or a "
        "constant side."
    ),
    "spearman": (
        "Spearman's rho (scipy.stats.spearmanr): Pearson's r of the ranks, ties given their "
        "mean rank, with a two-sided p-value, on the shared units."
    ),
    "kendall": (
        "Kendall's tau-b (scipy.stats.kendalltau, variant b): concordant minus discordant "
        "pairs, corrected for ties on either side, with a two-sided p-value, on the shared "
        "units."
    ),
    "system_level_correlation": (
        "System ranking correlation: the mean score of each system on the units both the "
        "metric and the humans scored, then Spearman and Kendall tau-b over systems; n is the "
        "number of systems."
    ),
    "inter_factor_kendall": (
        "CoRE coupling analysis: Kendall's tau-b between every pair of factors scored by one "
        "rater type (the humans, or one LLM judge), on the units both factors have; the mean "
        "absolute off-diagonal value summarises how much the factors move together."
    ),
    "sample_efficiency": (
        "System-ranking correlation against the human ranking (all human-rated dialogues) when "
        "the metric sees only k dialogues per system, drawn without replacement; repeated "
        f"{SAMPLE_EFFICIENCY_REPEATS} times per k from a fixed seed ({DEFAULT_SEED}), reporting "
        "the mean and the 2.5–97.5 percentile range of the draws."
    ),
    "correlation_jackknife_ci": (
        "A correlation with a studentized cluster interval: the coefficient is recomputed "
        "without each dialogue in turn (delete-one-cluster jackknife; turns of one dialogue "
        "are never treated as independent), and the interval is tanh(z ± t_{G−1, 0.975} × SE) "
        "with z = atanh(r) and SE the jackknife standard error of z over the G dialogues."
    ),
    "evaluator_correlation": (
        "Metric leaderboard: each evaluator's correlation with the human scores, with a "
        "dialogue-jackknife interval on Fisher's z (t with G − 1 df). Every pair of evaluators "
        "is tested on r_e − r_f with the same jackknife (t with G − 1 df), and an "
        "evaluator's rank is 1 + the number of evaluators significantly higher after "
        "Holm's correction over all pairs on the page (family-wise error at most 5%). "
        "An undefined correlation has no rank."
    ),
    "cluster_t_mean": (
        "A mean over units (e.g. system turns) with a studentized cluster interval: the mean "
        "is recomputed without each dialogue in turn (delete-one-cluster jackknife, because "
        "turns of one dialogue are correlated), and the interval is mean ± t_{G−1, 0.975} × "
        "SE, SE² = (G − 1)/G × Σ (mean_(−g) − their average)², over the G dialogues with "
        "values; a metric bounded on one side only has it cut there (a metric bounded on "
        "both sides gets cluster_t_logit_mean instead). For dialogues of equal length this is "
        "the t-interval of the dialogue means. Coverage is measured by bench_calibration."
    ),
    "cluster_t_logit_mean": (
        "A mean of a metric bounded on both sides, range [a, b] (e.g. a share in [0, 1]): the "
        "studentized cluster interval of cluster_t_mean built on the logit scale, so it never "
        "leaves the range. With x = (mean − a)/(b − a) and SE the delete-one-dialogue "
        "jackknife standard error of the mean, the interval is a + (b − a) × "
        "expit(logit(x) ± t_{df, 0.975} × SE / ((b − a) x (1 − x))) (delta method). A mean on "
        "a bound (every unit there) has no logit: its interval is the Clopper–Pearson "
        "interval of G successes in G dialogues, [a + (b − a) × 0.025^(1/G), b] (and its "
        "mirror at a). It covered 0.975, 0.964, 0.955 of a mean of 0.3 and 0.978, 0.980, "
        "0.961 of a share of 0.95 at 10, 30, 100 dialogues (bench_calibration)."
    ),
    "cluster_t_difference": (
        "Difference mean(A) − mean(B) over the dialogues both systems answered, with the same "
        "jackknife-t interval applied to the difference (both means recomputed without each "
        "dialogue); significant when the 95% interval excludes 0, i.e. p < 0.05. For dialogues "
        "of equal length it is the per-dialogue paired t-test."
    ),
    "cluster_randomisation_difference": (
        "Difference mean(A) − mean(B) (unit-weighted) over the dialogues both systems "
        "answered, when they share 6 to 12 dialogues (the compare page and manage.py compare): "
        "an exact randomisation test over dialogues. Under no difference A's and B's values "
        "of one dialogue are exchangeable, so each of the 2^G ways of swapping them within "
        "dialogues is as likely as the data; the two-sided mid-p-value is the share of swaps "
        "whose |difference| exceeds the observed one plus half the share that equals it, and "
        "the 95% interval is every shift δ not rejected once δ is taken off A's values "
        "(bisection). Significant when p ≤ 0.05. No random draws. It replaced the "
        "jackknife-t there, whose df correction made it reject too rarely at 10 dialogues "
        "of unequal length (bench_calibration)."
    ),
    "holm_tie_aware_rank": (
        "A system's rank is 1 + the number of systems significantly better than it on that "
        "metric. Each pair is tested with the cluster jackknife-t test of the difference, and "
        "Holm's step-down procedure over all pairs of the leaderboard decides which are "
        "significant, so the chance that any two equally good systems are ranked apart is at "
        "most 5% (family-wise), not 5% per pair. Systems that cannot be told apart share a rank."
    ),
    "paired_t_test": (
        "Per-dialogue paired t-test (scipy.stats.ttest_rel, two-sided): each system's unit "
        "values are averaged per dialogue and the test runs on the dialogues both systems "
        "have; n is that number of dialogues. Undefined with fewer than two dialogues or when "
        "the per-dialogue differences do not vary."
    ),
    "elo": (
        "Online Elo over pairwise votes in time order: every system starts at 1000; after a "
        "vote, R_A += 16 × (S_A − E_A) and R_B −= the same amount, with S_A = 1, 0 or 0.5 for "
        "a tie and E_A = 1 / (1 + 10^((R_B − R_A) / 400)). CI: votes resampled with replacement "
        "and replayed in time order. " + _BOOTSTRAP + " The interval is the spread of this "
        "order-dependent number, not an interval for a system's strength: Elo's expectation "
        "depends on the number and order of votes (use Bradley–Terry for strength). A system with "
        "fewer than 10 votes gets no interval and no rank interval."
    ),
    "bradley_terry": (
        "Bradley–Terry maximum likelihood: P(i beats j) = 1 / (1 + e^(θ_j − θ_i)), ties as half "
        "a win for each side, fitted by Newton's method and shown as 1000 + 400 × log10 of the "
        "strength (mean 1000). Undefined when some group of systems never won against the "
        "rest (the likelihood has no maximum). CI: votes resampled with replacement. " + _BOOTSTRAP
        + " Resamples without an MLE are skipped; when more than 5% are, there is no interval "
        "(too few votes: the skipped resamples are the extreme ones); a system with fewer "
        "than 10 votes gets none either. It covered the true "
        "Bradley–Terry rating 94.5–94.8% of the time in simulated arenas of 9 systems and "
        "100–1,000 votes (bench_calibration)."
    ),
    "ppi_mean": (
        "Human-anchored mean (PPI++, Angelopoulos, Duchi & Zrnic 2024): θ = λ × the evaluator's "
        "mean over the units humans did not label + the mean of (human − λ × evaluator) over "
        "the labelled units, unbiased for the human mean for any λ, whatever the evaluator's "
        "scale. λ minimises the dialogue-clustered variance (power tuning), clipped to [0, 1]: "
        "λ = 0 is the human-only mean. The 95% interval is θ ± t × SE, SE from a stratified "
        "delete-one-dialogue jackknife (labelled dialogues, and the others; λ re-tuned in each) "
        "and t with the Bell–McCaffrey df of the labelled dialogues, as for every cluster mean. "
        "When that variance exceeds the human-only one, PPI++ falls back to the human-only mean, "
        "so its interval is never wider. Effective labels = n × Var(human-only) / Var(PPI++). "
        "Coverage is measured by bench_calibration."
    ),
    "ppi_human_only_mean": (
        "The mean of the human labels (each unit's mean over its annotators) on the units that "
        "also have an evaluator score, with the cluster jackknife-t interval of every "
        "leaderboard mean (cluster_t_mean): PPI++ at λ = 0."
    ),
    "ppi_evaluator_only_mean": (
        "The evaluator's mean over every unit of the system it scored (labelled or not), with "
        "the cluster jackknife-t interval of every leaderboard mean. It estimates the "
        "evaluator's mean, not the humans': its bias is not corrected."
    ),
    "ppi_difference": (
        "Difference of two systems' PPI++ means with a stratified cluster jackknife-t interval: "
        "each dialogue is left out of both systems at once (systems scored on the same "
        "dialogues are correlated; on disjoint ones the variances add), t with the smaller of "
        "the two systems' df; two-sided p-value from the same t."
    ),
    "ppi_holm_tie_aware_rank": (
        "Human-anchored ranking: a system's rank is 1 + the number of systems whose PPI++ mean "
        "is significantly better, each pair tested with the PPI++ difference and Holm's "
        "step-down procedure over all pairs (family-wise error at most 5%); systems that "
        "cannot be told apart share a rank."
    ),
    "active_ipw_mean": (
        "Human-anchored mean of a study that hands items out by the active policy (active "
        "inference, Zrnic & Candès 2024, IPW, with a tuned intercept): θ = (1/n) Σ [(λ f_i + c) "
        "+ (Y_i − λ f_i − c) ξ_i / π_i] "
        "over the study's items in the handout waves whose drawn items are all labelled, ξ_i = 1 "
        "for an item drawn for the humans with inclusion probability π_i (wave 1 uniform, later "
        "waves π ∝ the evaluator's predicted error, each item considered in one wave). The "
        "inverse-probability weight 1/π keeps it unbiased for the human mean for any λ and c; λ "
        "(in [0, 1]) and c are tuned together to minimise the summands' variance (c absorbs a "
        "judge on another scale than the humans). The 95% interval is θ ± z × SE, SE the "
        "dialogue-clustered sandwich of the summands (the paper's sequential form: the waves' "
        "summands are martingale differences)."
    ),
    "active_ipw_human_only_mean": (
        "The Horvitz–Thompson mean of the human labels of an active study's drawn items, each "
        "weighted by 1/π (the active-inference mean at λ = 0: no evaluator), with the "
        "dialogue-clustered sandwich interval θ ± z × SE."
    ),
    "active_ipw_difference": (
        "Difference of two systems' active-inference (IPW) means with a normal interval and "
        "two-sided p-value, SE the dialogue-clustered sandwich of both systems' influence values "
        "(each dialogue's summands of both systems together: systems judged on the same "
        "dialogues are correlated)."
    ),
    "active_ipw_holm_tie_aware_rank": (
        "Human-anchored ranking of an active study: a system's rank is 1 + the number of systems "
        "whose active-inference (IPW) mean is significantly better, each pair tested with the "
        "IPW difference (dialogue-clustered sandwich SE) and Holm's step-down procedure over "
        "all pairs; the interval shown is the system's own (θ ± z × SE)."
    ),
}


# --- which interval a method text describes ------------------------------------------------------

# Every kind of interval an estimate can record (``params["interval"]``; an estimate with
# ``n_resamples`` in its params is a percentile bootstrap) and the words a method text must use for
# it: a test checks that the text printed next to each number names the interval the function
# computed (issue 30: citation precision's text said "bootstrap" over a jackknife-t interval).
INTERVAL_PHRASES: dict[str, str] = {
    "jackknife_t": "jackknife",
    "stratified_jackknife_t": "jackknife",  # PPI++ (ppi.anchored_mean): labelled and not
    "jackknife_t_logit": "logit scale",
    "jackknife_fisher_z_t": "jackknife",
    "jackknife_root_icc_z_t": "studentized jackknife",
    "profile_likelihood_beta_binomial_t": "profile-likelihood",
    "dirichlet_multinomial_test_inversion_mid_p": "test-inversion",
    "percentile_bootstrap": "percentile bootstrap",
    "randomisation_over_dialogues": "randomisation test over dialogues",
    "clustered_sandwich_normal": "sandwich",  # active inference (stats/active_handout.py)
}


def interval_kind(params: dict) -> str | None:
    """The kind of interval an estimate's PARAMS record (a key of INTERVAL_PHRASES), or None."""
    if params.get("interval"):
        return str(params["interval"])
    return "percentile_bootstrap" if "n_resamples" in params else None


# --- versions of the stored intervals (statistics.md "Stored intervals and their method") -------

# The procedure behind every interval or test Concord stores, with its version: a method's
# number goes up whenever its procedure changes, and every stored row records the method and
# version it was computed with. A row whose version differs from the current one was computed
# by an older procedure: `manage.py recompute_intervals` recomputes it (queued after `migrate`)
# and the pages mark it "computed with an older method" until then. Version 0 is a row stored
# before the method was recorded.
INTERVAL_VERSIONS: dict[str, int] = {
    # 1: percentile cluster bootstrap (before issue 19); 2: studentized cluster jackknife-t;
    # 3: a metric bounded on both sides moves to cluster_t_logit_mean (issue 30)
    "cluster_t_mean": 3,
    # 1: jackknife-t on the logit scale of the range, Clopper–Pearson on a bound (issue 30)
    "cluster_t_logit_mean": 1,
    # 1: paired percentile bootstrap per pair; 2: jackknife-t tests, Holm over all pairs
    "holm_tie_aware_rank": 2,
    # 1: turns resampled independently; 2: dialogue jackknife on Fisher's z, Holm
    "evaluator_correlation": 2,
    # 1: percentile bootstrap over units; 2: jackknife-t on Fisher's intraclass z;
    # 3: square-root intraclass z; 4: no interval for too few minority-category values;
    # 5: nor for a nominal field with no unit where the annotators disagree; 6: a yes/no field
    # rated twice per unit gets the t-calibrated profile-likelihood interval; 7: other yes/no
    # fields, and fields of 3+ categories on < 20 units, the Dirichlet-multinomial test
    # inversion
    "krippendorff_alpha": 7,
    # 1: percentile bootstrap, replicates without an MLE skipped; 2: no interval when more
    # than 5% of the replicates have no MLE; 3: none for a system with < 10 votes (issue 30)
    "bradley_terry": 3,
    # 1: percentile bootstrap over votes; 2: no interval for a system with < 10 votes
    "elo": 2,
}
OLDER_METHOD = "computed with an older method; manage.py recompute_intervals updates it"


def interval_version(method: str) -> int:
    """The current version of METHOD's procedure (1 for a method never changed)."""
    return INTERVAL_VERSIONS.get(method, 1)


def interval_is_current(method: str, version: int) -> bool:
    """Whether a row stored by METHOD at VERSION was computed by today's procedure."""
    return bool(method) and version == interval_version(method)


def interval_versions_key() -> str:
    """Every method's version in one string: part of the cache keys of computed reports, so a
    report cached before a method changed is never served."""
    return ",".join(f"{name}={number}" for name, number in sorted(INTERVAL_VERSIONS.items()))
