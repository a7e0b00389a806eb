"""What a chapter prints and shows, in Chinese (``mha_lib.course.chinese``);
the Chinese edition's use of it is tested in ``test_extensions.py``, a
Chinese download run again in ``test_a_chinese_download_stays_chinese_when_
run``."""

import io

from mha_lib.course.chinese import PrintedInChinese, output_in_chinese
from mha_lib.course.figure_editions import MIME

WORDS = {
    "one sentence\nover {} lines": "一句话，{} 行",
    "parameters": "参数量",
    "a claim": "一条论断",
}


def test_a_print_goes_into_chinese_whole_or_line_by_line():
    written = io.StringIO()
    stream = PrintedInChinese(written, WORDS)
    print("one sentence\nover 2 lines", file=stream)
    print("mha_lib 0.4.0, running on", end=" ", file=stream)
    assert written.getvalue() == "一句话，2 行\n", "a line waits for its end"
    print("cpu", file=stream)
    print("Linear(in_features=4)", file=stream)
    stream.flush()
    assert written.getvalue().splitlines()[1:] == [
        "mha_lib 0.4.0，运行于 cpu",
        "Linear(in_features=4)",
    ]


def test_an_output_shows_its_chinese_figure_table_and_claims():
    data = {
        "image/png": "english",
        MIME: {"zh": "chinese", "shown": {"zh": {"width": 3, "height": 2}}},
        "text/markdown": "| parameters |\n|---|\n| 1,024 |",
        "text/html": '<details class="mha-claims"><summary>✓ 1 claim '
        "checked</summary><ul><li>✓ a claim</li></ul></details>",
    }
    metadata = {}
    missing = []
    output_in_chinese(data, WORDS, metadata, lambda *m: missing.append(m))
    assert MIME not in data and data["image/png"] == "chinese"
    assert metadata["image/png"] == {"width": 3, "height": 2}
    assert data["text/markdown"] == "| 参数量 |\n|---|\n| 1,024 |"
    assert "✓ 已检验 1 条论断" in data["text/html"]
    assert "<li>✓ 一条论断</li>" in data["text/html"]
    assert missing == []
    untranslated = {"text/markdown": "| heads |"}
    output_in_chinese(untranslated, WORDS, None, lambda *m: missing.append(m))
    assert untranslated == {"text/markdown": "| heads |"}, "it stays"
    assert missing == [("a table cell", "heads")]
