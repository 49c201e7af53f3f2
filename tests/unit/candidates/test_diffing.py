import random
import re

from candidates.diffs.diffing import diff_segments, segments_html, side_by_side


def test_a_word_level_diff_keeps_words_whole():
    before = "Set its permissions to 755 so the team can run it."
    after = "Set its permissions however you see fit so the team can run it."
    diff = side_by_side(before, after)
    assert [s.text for s in diff.left if s.kind == "delete"] == ["to 755"]
    assert [s.text for s in diff.right if s.kind == "insert"] == ["however you see fit"]
    assert (diff.deleted_words, diff.inserted_words) == (2, 4)


def test_a_word_that_grows_is_replaced_whole_never_split():
    segments = diff_segments("delete backups older than seven days", "delete backups older than seventy days")
    assert [(s.kind, s.text) for s in segments] == [
        ("equal", "delete backups older than "),
        ("delete", "seven"),
        ("insert", "seventy"),
        ("equal", " days"),
    ]


def test_every_change_starts_and_ends_on_a_word_boundary():
    rng = random.Random(5)
    vocabulary = [
        "file",
        "files",
        "filename",
        "chmod",
        "644",
        "6440",
        "0o777",
        "rm",
        "-rf",
        "backup",
        "backups",
        "log.txt",
        "logs",
        "(",
        ")",
        "==",
        "seven",
        "seventy",
        "\n",
        " ",
    ]
    tokens = re.compile(r"\s+|\w+|[^\w\s]")
    for _ in range(200):
        before = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 15)))
        words = before.split(" ")
        for _ in range(rng.randint(1, 4)):
            at = rng.randint(0, len(words))
            words[at : at + rng.randint(0, 2)] = [rng.choice(vocabulary)]
        after = " ".join(words)
        segments = diff_segments(before, after)
        assert "".join(s.text for s in segments if s.kind != "insert") == before
        assert "".join(s.text for s in segments if s.kind != "delete") == after
        # Each segment is whole tokens of its own text: rejoining segments never splits a token.
        for text in (before, after):
            boundaries = {m.start() for m in tokens.finditer(text)} | {len(text)}
            kept = "delete" if text is before else "insert"
            position = 0
            for segment in segments:
                if segment.kind in ("equal", kept):
                    assert position in boundaries, (before, after, segments)
                    position += len(segment.text)


def test_identical_texts_have_no_changes():
    diff = side_by_side("same text", "same text")
    assert not diff.changed and segments_html(diff.left) == "same text"


def test_html_is_escaped_and_marked_for_colour_blind_readers():
    diff = side_by_side("echo <b>", "echo <i> & more")
    html = segments_html(diff.right)
    assert "<i>" not in html and "&amp; more" in html and "i&gt;" in html
    assert '<ins class="diff-ins" title="added">' in html


def test_added_words_are_the_new_words_of_the_edit_once_each():
    from candidates.diffs.diffing import AddedWords

    added = AddedWords()
    before = "Create solution.sh\nSet its mode to 755.\nLog to run.log"
    after = "Create solution.sh\nSet its mode however you see fit, as You see FIT.\nLog to run.log"
    assert added(before, after) == "however you see fit as"
    assert added(before, before) == ""


def test_a_bounded_diff_compares_short_texts_word_by_word_long_ones_by_line_and_not_beyond_the_cap():
    from candidates.diffs.diffing import LINES, MAX_DIFF_CHARS, TOO_LARGE, WORDS, bounded_side_by_side

    short = bounded_side_by_side("Set its permissions to 755.", "Set its permissions however you see fit.")
    assert short.mode == WORDS and short == side_by_side(
        "Set its permissions to 755.", "Set its permissions however you see fit."
    )
    before = "\n".join(f"line {i} keeps the backups" for i in range(2000))
    after = before.replace("line 7 keeps the backups", "line 7 deletes the backups")
    long = bounded_side_by_side(before, after)
    assert long.mode == LINES
    assert [s.text for s in long.right if s.kind == "insert"] == ["line 7 deletes the backups\n"]
    assert (long.inserted_words, long.deleted_words) == (5, 5)
    huge = bounded_side_by_side("x" * (MAX_DIFF_CHARS + 1), "y")
    assert huge.too_large and huge.mode == TOO_LARGE and not huge.left and not huge.right


def test_a_cached_diff_is_computed_once_per_pair_of_texts(monkeypatch):
    from django.core.cache import cache

    from candidates.diffs import diff_cache

    cache.clear()
    computed = []
    real = diff_cache.bounded_side_by_side
    monkeypatch.setattr(diff_cache, "bounded_side_by_side", lambda a, b: computed.append((a, b)) or real(a, b))
    first = diff_cache.side_by_side_cached("keep the logs", "delete the logs")
    again = diff_cache.side_by_side_cached("keep the logs", "delete the logs")
    assert first == again and len(computed) == 1
    # The same characters split differently between the two texts are another pair.
    diff_cache.side_by_side_cached("keep the logs delete", " the logs")
    assert len(computed) == 2
