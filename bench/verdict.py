"""bench/verdict.py — one rule for "this build against that one", shared by
bench/compare (two revisions on this machine) and bench/scale --before (two
bundles on the many-core machine; scale-bundle copies this file beside it).
Python 3 standard library only."""
import statistics


def verdict(a, b):
    """Times of A and of B (the same benchmark): median of each, B/A, the
    noise band and a verdict. The noise is the larger spread, (max - min) /
    median, of the two (at least 3 %); B/A beyond 1 + noise is SLOWER,
    below 1 / (1 + noise) faster, otherwise same."""
    if not a or not b or any(v is None for v in a + b):
        return None, None, None, None, "FAILED"
    ma, mb = statistics.median(a), statistics.median(b)
    if ma <= 0:
        return ma, mb, None, None, "-"
    spread = lambda v: (max(v) - min(v)) / statistics.median(v) if statistics.median(v) > 0 else 0
    noise = max(spread(a), spread(b), 0.03)
    ratio = mb / ma
    if len(a) < 2 or len(b) < 2:
        return ma, mb, ratio, None, "one repeat: no verdict"
    if ratio > 1 + noise:
        return ma, mb, ratio, noise, "SLOWER"
    if ratio < 1 / (1 + noise):
        return ma, mb, ratio, noise, "faster"
    return ma, mb, ratio, noise, "same"
