"""Small hand-made mergeable ranks for tests: the 256 single bytes, then chosen tokens."""

BYTE_RANKS = {bytes([i]): i for i in range(256)}


def hand_ranks(*tokens):
    """The single bytes, then ``tokens`` in order, each ranked next."""
    ranks = dict(BYTE_RANKS)
    for t in tokens:
        ranks[t] = len(ranks)
    return ranks
