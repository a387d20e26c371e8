"""A tiny module standing in for an untrusted repository."""


def add(a, b):
    return a + b


def mean(values):
    if not values:
        raise ValueError("mean of nothing")
    return sum(values) / len(values)
