"""A running service keeps what start-up loaded out of the garbage collector's view: a full
collection walked the word dictionary and the model's vocabulary, ~100 ms with the event loop
stopped, every few seconds under load (runtime.exempt_startup_objects)."""

import gc

import jieba


def test_what_start_up_loaded_is_outside_the_collectors_generations(service):
    assert service.url  # the service has started (its lifespan ran)
    assert len(jieba.dt.FREQ) > 100_000  # loaded
    collected = (o for generation in (0, 1, 2) for o in gc.get_objects(generation=generation))
    assert not any(o is jieba.dt for o in collected)  # the segmenter (a dict of atoms is never walked)
    assert gc.get_freeze_count() > 100_000
