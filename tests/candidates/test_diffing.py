from candidates.diffing import segments_html, side_by_side


def test_a_word_level_diff_keeps_words_whole():
    before = "Set its permissions to 755 so the team can run it."
    after = "Set its permissions however you see fit so the team can run it."
    diff = side_by_side(before, after)
    assert [s.text for s in diff.left if s.kind == "delete"] == ["to 755"]
    assert [s.text for s in diff.right if s.kind == "insert"] == ["however you see fit"]
    assert (diff.deleted_words, diff.inserted_words) == (2, 4)


def test_identical_texts_have_no_changes():
    diff = side_by_side("same text", "same text")
    assert not diff.changed and segments_html(diff.left) == "same text"


def test_html_is_escaped_and_marked_for_colour_blind_readers():
    diff = side_by_side("echo <b>", "echo <i> & more")
    html = segments_html(diff.right)
    assert "<i>" not in html and "&amp; more" in html and "i&gt;" in html
    assert '<ins class="diff-ins" title="added">' in html


def test_added_words_are_the_new_words_of_the_edit_once_each():
    from candidates.diffing import AddedWords

    added = AddedWords()
    before = "Create solution.sh\nSet its mode to 755.\nLog to run.log"
    after = "Create solution.sh\nSet its mode however you see fit, as You see FIT.\nLog to run.log"
    assert added(before, after) == "however you see fit as"
    assert added(before, before) == ""
