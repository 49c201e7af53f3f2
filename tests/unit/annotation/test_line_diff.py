"""The line-aligned diff of the labelling page and the item review (pure)."""

from annotation.labelling.line_diff import aligned_diff


def test_an_edited_line_sits_beside_its_original_with_word_marks():
    diff = aligned_diff("a\nb c d\ne\nf", "a\nb X d\ne\nnew\nf")
    assert [(r.kind, r.left_number, r.right_number) for r in diff.rows] == [
        ("equal", 1, 1),
        ("change", 2, 2),
        ("equal", 3, 3),
        ("added", None, 4),
        ("equal", 4, 5),
    ]
    assert '<del class="diff-del" title="removed">c</del>' in diff.rows[1].left_html
    assert '<ins class="diff-ins" title="added">X</ins>' in diff.rows[1].right_html
    assert diff.changes == 2
    assert [(line.sign, line.number) for line in diff.unified] == [
        (" ", 1),
        ("-", 2),
        ("+", 2),
        (" ", 3),
        ("+", 4),
        (" ", 5),
    ]


def test_text_is_escaped_and_identical_tasks_have_no_change():
    diff = aligned_diff("<b>x</b>", "<b>x</b>")
    assert diff.changes == 0 and diff.rows[0].left_html == "&lt;b&gt;x&lt;/b&gt;"
