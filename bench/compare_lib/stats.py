"""Per-figure summaries of repeated samples and the ratios between two sides.

Each figure has a direction: tokens/s are better when higher, milliseconds when lower.
"Best" is the best sample in that direction; a ratio is always staticlm / peer of the
same statistic, so for tokens/s a ratio above 1 means staticlm is faster, and for
milliseconds a ratio below 1 means staticlm is faster.
"""

import statistics


def summarize(samples, higher_is_better=True):
    """Median, best, min, max and relative spread of a list of numbers (None if empty)."""
    values = [v for v in samples if v is not None]
    if not values:
        return None
    median = statistics.median(values)
    lo, hi = min(values), max(values)
    return {
        "n": len(values),
        "median": median,
        "best": hi if higher_is_better else lo,
        "min": lo,
        "max": hi,
        # How wide the samples are compared with their median: the noise of this figure.
        "spread_pct": (hi - lo) / median * 100.0 if median else None,
    }


def ratios(ours, peer):
    """staticlm / peer of the medians and of the bests; None when either side is missing."""
    if not ours or not peer:
        return None
    def div(a, b):
        return a / b if b else None
    return {"median": div(ours["median"], peer["median"]), "best": div(ours["best"], peer["best"])}
