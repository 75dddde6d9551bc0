"""Per-figure summaries of repeated samples and the ratios between two sides.

Each figure has a direction: tokens/s are better when higher, milliseconds when lower.
"Best" is the best sample in that direction; a ratio is always staticlm / peer of the
same statistic, so for tokens/s a ratio above 1 means staticlm is faster, and for
milliseconds a ratio below 1 means staticlm is faster.

The sides alternate round by round, so round r of staticlm and round r of the peer ran
seconds apart under nearly the same machine load: the per-round ("paired") ratios cancel
slow drifts of the machine that the ratio of two medians taken over all rounds does not.
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


def paired_ratios(ours, peer):
    """staticlm / peer round by round (same index = adjacent rounds): the ratios, their median,
    min and max; None when no round has both sides."""
    values = [a / b for a, b in zip(ours, peer) if a is not None and b]
    if not values:
        return None
    return {"ratios": values, "n": len(values), "median": statistics.median(values),
            "min": min(values), "max": max(values)}
