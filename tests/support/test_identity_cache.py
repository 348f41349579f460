import gc

from minitvm.support.identity_cache import IdentityCache


class Box:
    def __init__(self, value):
        self.value = value

    def __eq__(self, other):  # equal boxes are still different objects to the cache
        return isinstance(other, Box) and other.value == self.value

    __hash__ = object.__hash__


def test_answer_is_built_once_per_object_and_follows_identity_not_equality():
    calls = []
    cache = IdentityCache(4)

    def build(box):
        calls.append(box)
        return [box.value * 2]

    a, twin = Box(3), Box(3)
    first = cache.get(a, build)
    assert first == [6] and cache.get(a, build) is first
    assert cache.get(twin, build) is not first  # an equal object gets its own answer
    assert calls == [a, twin]


def test_least_recently_asked_object_is_dropped_and_the_cache_holds_its_objects():
    cache = IdentityCache(2)
    boxes = [Box(i) for i in range(3)]
    answers = [cache.get(b, lambda b: object()) for b in boxes[:2]]
    assert cache.get(boxes[0], lambda b: object()) is answers[0]  # boxes[0] now the most recent
    cache.get(boxes[2], lambda b: object())  # drops boxes[1]
    assert len(cache) == 2
    assert cache.get(boxes[1], lambda b: "rebuilt") == "rebuilt"
    # an object the caller let go of stays alive while remembered: no other object can take its id
    held = Box(9)
    answer = cache.get(held, lambda b: "nine")
    ident = id(held)
    del held
    gc.collect()
    newcomers = [Box(9) for _ in range(100)]
    assert all(id(n) != ident for n in newcomers)
    assert answer == "nine"
    cache.clear()
    assert len(cache) == 0
