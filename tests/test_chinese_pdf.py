"""The Chinese edition's PDF, printed last: it holds every chapter in
Chinese, reached by the Chinese intro's link, with bookmarks (the English
PDF: ``test_pdfs.py``). Skipped, with the reason, when Playwright or Chromium
is missing."""

import re
import unicodedata

import printed
from browsing import CHINESE, page_texts, skip_without_a_browser

skip_without_a_browser()


def test_the_chinese_pdf_holds_every_chapter_in_chinese(built_book):
    import pypdf

    html_root = built_book
    intro = (html_root / CHINESE / "book" / "intro.html").read_text()
    # the text's link and the .pdf button: one file
    (link,) = set(re.findall(r'href="([^"]+\.pdf)"', intro))
    pdf = (html_root / CHINESE / "book" / link).resolve()
    assert pdf == html_root / CHINESE / "mha-answered.pdf" and pdf.is_file(), (
        f"the Chinese intro links {link}, and the build wrote no PDF there"
    )
    reader = pypdf.PdfReader(pdf)
    text = "".join(
        "".join(unicodedata.normalize("NFKC", page).split())
        for page in page_texts(pdf, len(reader.pages))
    )
    titles = [
        re.sub(r"\s+", "", re.sub(r"<[^>]+>", "", h1.group(1)))
        for path in sorted((html_root / CHINESE / "notebooks").glob("*.html"))
        for h1 in [re.search(r"<h1>(.*?)</h1>", path.read_text(), re.S)]
    ]
    assert len(titles) == 7
    for title in titles:
        assert re.search(r"[\u4e00-\u9fff]", title), title
        title = unicodedata.normalize("NFKC", title).rstrip("#")
        assert title in text, title
    outline = [
        item.title for item in reader.outline if not isinstance(item, list)
    ]
    assert "目录" in outline, outline
    assert len(set(outline)) == len(outline), f"named twice: {outline}"
    printed.assert_bookmarks_read_cleanly(reader)
    printed.assert_no_page_nearly_empty(pdf, reader)
    printed.assert_no_link_to_the_build(reader)
    printed.assert_no_text_about_controls(html_root / CHINESE, text)
    printed.assert_every_interactive_figure_names_its_selection(
        html_root / CHINESE, text
    )


def test_the_chinese_pdfs_figures_print_at_200_ppi_or_more(built_book):
    pdf = built_book / CHINESE / "mha-answered.pdf"
    printed.assert_figures_print_at_200_ppi(pdf)
