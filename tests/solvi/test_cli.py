"""The `solvi` command line: check, plan and show."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from flows.echo import HOSTILE, HOSTILE_SHOWN, echo_system

from solvi import Catalog, Question, Response, System, cli
from solvi.cli import main
from solvi.response import record_hashes, render

ROOT = Path(__file__).resolve().parents[2]
FLOWS = Path(__file__).resolve().parent / "flows"
CLAIMS = "examples/claims.py:system"
CYCLIC = "tests/solvi/flows/cyclic.py:catalog"
UNREACHABLE = "tests/solvi/flows/unreachable.py:system"

CLAIMS_PLAN = """\
flow of claims for keys claim, documents (deterministic strategist)
steps
   1. policy              phase 0  fn
   2. policy_in_force     phase 0  hard check
   3. sanctions_clear     phase 0  hard check
   4. fraud_model         phase 1  fn -> fraud_score (producer 1 of 2)
   5. fraud_rules         phase 1  fn -> fraud_score (producer 2 of 2)
   6. fraud_ok            phase 1  check
   7. missing_documents   phase 1  fn
   8. documents_complete  phase 1  check
   9. covered             phase 1  check
  10. points              phase 1  fn
  11. approve             phase 1  rule
  12. fast_track          phase 1  rule
questions
  approve
    targets: covered, fraud_ok, documents_complete, points
    narrowed: yes
    hard checks: policy_in_force, sanctions_clear
  fast_track
    targets: approve, points, claim
    narrowed: yes
    hard checks: policy_in_force, sanctions_clear
skipped
  (none)
"""


@pytest.fixture(autouse=True)
def _isolated_imports(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Run each test from the project root and forget the modules it loaded."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    homes = (ROOT / "examples", FLOWS, tmp_path)
    for name in set(sys.modules) - before:
        file = getattr(sys.modules[name], "__file__", None)
        if file is not None and any(Path(file).resolve().is_relative_to(h) for h in homes):
            del sys.modules[name]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def _small_response() -> Response:
    cat = Catalog("orders")

    @cat.fn
    def total(price: float, quantity: int) -> float:
        return price * quantity

    @cat.check(hard=True)
    def in_stock(total: float, stock: int) -> bool:
        return stock > 0

    @cat.rule
    def accept(total: float) -> bool:
        return total < 500

    system = System(cat, [Question("accept", forced=False)])
    return system.ask({"price": 12.5, "quantity": 4, "stock": 0})


# -- check ---------------------------------------------------------------------------


def test_check_of_the_claims_example_is_clean(capsys: pytest.CaptureFixture[str]) -> None:
    """The gallery catalog has no cycle and no unreachable part: exit status 0."""
    status, out, err = _run(capsys, "check", CLAIMS)
    assert status == 0
    assert err == ""
    assert out.splitlines() == [
        f"checked catalog claims ({CLAIMS}): 12 parts, 2 questions",
        "request keys (no part produces them, so requests bring them):",
        "  claim      needed by approve, fast_track",
        "  documents  needed by approve, fast_track",
        "ok: no cycles, every part is reached by a question",
    ]


def test_check_reports_a_cycle_as_a_path_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    """A cycle is an error naming the path and the questions that always abstain."""
    status, out, _ = _run(capsys, "check", CYCLIC)
    assert status == 1
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: cycle limit -> score -> limit: no request can compute these facts, so these "
        "questions always abstain: approve; make one part on the cycle read something else"
    ]
    assert out.splitlines()[-1] == "1 error, 0 warnings"


def test_check_of_a_catalog_asks_one_question_per_rule(capsys: pytest.CaptureFixture[str]) -> None:
    """A Catalog target is checked with one question per rule, in declared order."""
    status, out, _ = _run(capsys, "check", "--json", CYCLIC)
    assert status == 1
    assert json.loads(out)["questions"] == ["approve", "label"]


def test_check_json_is_a_machine_readable_report(capsys: pytest.CaptureFixture[str]) -> None:
    """--json prints cycles, request keys, unreachable parts and the verdict."""
    status, out, _ = _run(capsys, "check", "--json", CYCLIC)
    report = json.loads(out)
    assert status == 1
    assert report["ok"] is False
    assert report["catalog"] == "cyclic"
    assert report["cycles"] == [
        {
            "path": ["limit", "score", "limit"],
            "questions": {"approve": "cannot compute score: on a cycle: score -> limit -> score"},
        }
    ]
    assert report["request_keys"] == {"amount": ["approve", "label"]}
    assert report["unreachable"] == []
    assert len(report["errors"]) == 1


def test_check_warns_about_unreachable_parts_but_exits_0(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A part no question reaches is a warning; a check of what was computed is reached."""
    status, out, _ = _run(capsys, "check", UNREACHABLE)
    assert status == 0
    assert (
        "warning: part 'legacy_discount' is reached by no question; read its fact in a rule, "
        "list it in a Question's requires=, or remove it"
    ) in out.splitlines()
    assert "in_stock" not in out
    assert "  stock     needed by accept" in out.splitlines()
    assert out.splitlines()[-1] == "0 errors, 1 warning"


def test_check_json_lists_unreachable_parts_and_request_keys(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The JSON report names unreachable parts and which questions need each request key."""
    status, out, _ = _run(capsys, "check", "--json", UNREACHABLE)
    report = json.loads(out)
    assert status == 0
    assert report["ok"] is True
    assert report["unreachable"] == ["legacy_discount"]
    assert report["request_keys"] == {
        "price": ["accept"],
        "quantity": ["accept"],
        "stock": ["accept"],
    }


def test_check_reports_each_cycle_through_a_shared_fact(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Two cycles through one fact are two errors, as the planner's cycle search finds them."""
    (tmp_path / "loops.py").write_text(
        "from solvi import Catalog\n"
        "catalog = Catalog('loops')\n"
        "@catalog.fn\n"
        "def a(b, c):\n"
        "    return b + c\n"
        "@catalog.fn\n"
        "def b(a):\n"
        "    return a\n"
        "@catalog.fn\n"
        "def c(a, x):\n"
        "    return a + x\n"
        "@catalog.rule\n"
        "def answer(a):\n"
        "    return a > 0\n"
    )
    status, out, _ = _run(capsys, "check", "--json", f"{tmp_path / 'loops.py'}:catalog")
    report = json.loads(out)
    assert status == 1
    assert [c["path"] for c in report["cycles"]] == [["a", "b", "a"], ["a", "c", "a"]]
    assert report["request_keys"] == {"x": ["answer"]}


def test_check_walks_a_ruleless_question_like_the_planner(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A question without rule or uses= reports fn and check facts, so a rule is unreached."""
    (tmp_path / "report.py").write_text(
        "from solvi import Catalog, System\n"
        "catalog = Catalog('report')\n"
        "@catalog.fn\n"
        "def total(price, quantity):\n"
        "    return price * quantity\n"
        "@catalog.rule\n"
        "def accept(total):\n"
        "    return total < 500\n"
        "system = System(catalog, ['summary'])\n"
    )
    status, out, _ = _run(capsys, "check", "--json", f"{tmp_path / 'report.py'}:system")
    report = json.loads(out)
    assert status == 0
    assert report["unreachable"] == ["accept"]
    assert report["request_keys"] == {"price": ["summary"], "quantity": ["summary"]}


def test_check_reports_a_misspelled_question_name(capsys: pytest.CaptureFixture[str]) -> None:
    """A bare question name that looks like a rule's is a build error naming the rule."""
    status, out, err = _run(capsys, "check", "tests/solvi/flows/ruleless.py:system")
    assert status == 1
    assert out == ""
    assert "question 'aprove' has no rule of that name (did you mean 'approve'?)" in err


def test_check_fails_cleanly_when_the_system_cannot_be_built(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A PlanError while importing the module is one line on stderr: a catalog error, 1."""
    status, out, err = _run(capsys, "check", "tests/solvi/flows/broken_question.py:system")
    assert status == 1
    assert out == ""
    assert err == (
        "solvi check: module 'tests/solvi/flows/broken_question.py' failed to build its "
        "System: question 'approve' names rule 'aprove', which catalog 'broken' does not "
        "have (did you mean 'approve'?); fix the Question's rule=\n"
    )


# -- loading targets -------------------------------------------------------------------


def test_target_can_be_a_module_importable_from_the_current_directory(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """module:attr imports the module from the working directory."""
    monkeypatch.chdir(FLOWS)
    status, out, _ = _run(capsys, "check", "--json", "cyclic:system")
    assert status == 1
    assert json.loads(out)["catalog"] == "cyclic"


def test_file_target_can_import_modules_next_to_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A file target's folder is importable, so a catalog can use helpers beside it."""
    (tmp_path / "limits_helper.py").write_text("LIMIT = 500\n")
    (tmp_path / "orders.py").write_text(
        "from limits_helper import LIMIT\n"
        "from solvi import Catalog\n"
        "catalog = Catalog('orders')\n"
        "@catalog.rule\n"
        "def accept(total):\n"
        "    return total < LIMIT\n"
    )
    status, out, _ = _run(capsys, "check", f"{tmp_path / 'orders.py'}:catalog")
    assert status == 0
    assert "  total  needed by accept" in out


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (
            "no_such_module_here:system",
            "solvi check: cannot import module 'no_such_module_here': No module named "
            "'no_such_module_here'; run solvi from the directory that holds it, or give a "
            "file path (path/to/no_such_module_here.py:attribute)",
        ),
        (
            "examples/claims.py:sytem",
            "solvi check: no attribute 'sytem' in 'examples/claims.py'; name a System or a "
            "factory (it has: catalog, system)",
        ),
        (
            "examples/claims.py:CLAIMS",
            "solvi check: 'examples/claims.py:CLAIMS' is a list, not a solvi System; name a "
            "System, a Catalog, or a function without arguments that returns one",
        ),
        (
            "examples/claims.py",
            "solvi check: 'examples/claims.py' names no attribute; write module:attribute or "
            "path/to/file.py:attribute naming a System, a Catalog, or a function without "
            "arguments that returns one (for example examples/claims.py:system)",
        ),
        (
            "examples/nothing_here.py:system",
            f"solvi check: no file 'examples/nothing_here.py'; give the path of a Python "
            f"file, relative to {ROOT}",
        ),
    ],
)
def test_unloadable_targets_fail_with_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], target: str, message: str
) -> None:
    """Each loading mistake prints what is wrong and how to fix it, without a traceback."""
    status, out, err = _run(capsys, "check", target)
    assert status == 2
    assert out == ""
    assert err == message + "\n"


def test_a_module_that_raises_on_import_is_reported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An exception while importing names the module and the error."""
    (tmp_path / "explodes.py").write_text("raise RuntimeError('database URL not set')\n")
    status, _, err = _run(capsys, "check", f"{tmp_path / 'explodes.py'}:system")
    assert status == 2
    assert "failed at " in err
    assert ", line 1 (in <module>): RuntimeError: database URL not set;" in err
    assert "Traceback" not in err


def test_a_module_with_a_catalog_mistake_is_reported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A CatalogError raised by a decorator while importing is one clear line."""
    (tmp_path / "twice.py").write_text(
        "from solvi import Catalog\n"
        "catalog = Catalog('twice')\n"
        "@catalog.rule\n"
        "def approve(x):\n"
        "    return x\n"
        "@catalog.rule\n"
        "def approve(y):\n"
        "    return y\n"
    )
    status, _, err = _run(capsys, "check", f"{tmp_path / 'twice.py'}:catalog")
    assert status == 1
    assert "declares a part wrongly: part 'approve' is declared twice" in err
    assert err.count("\n") == 1
    status, out, _ = _run(capsys, "check", "--json", f"{tmp_path / 'twice.py'}:catalog")
    report = json.loads(out)  # a program reading the report gets one
    assert (status, report["ok"]) == (1, False)
    assert "part 'approve' is declared twice" in report["errors"][0]


# -- plan --------------------------------------------------------------------------------


def test_plan_prints_steps_questions_and_skipped_parts(capsys: pytest.CaptureFixture[str]) -> None:
    """The flow lists steps with their phase, each question's plan and the skipped parts."""
    status, out, err = _run(capsys, "plan", CLAIMS, "--keys", "claim,documents")
    assert status == 0
    assert err == ""
    assert out == CLAIMS_PLAN


def test_plan_shows_blocked_questions_and_skip_reasons(capsys: pytest.CaptureFixture[str]) -> None:
    """Without documents no question can be answered; the reasons come from the planner."""
    status, out, _ = _run(capsys, "plan", CLAIMS, "--keys", "claim, colour")
    lines = out.splitlines()
    assert status == 0
    assert lines[1] == "note: no part reads colour"
    assert (
        "    blocked: cannot compute documents_complete: inputs missing: missing_documents "
        "(it abstains without running anything)"
    ) in lines
    assert "  missing_documents   inputs missing: documents" in lines
    assert "  fraud_model         not needed" in lines


def test_plan_of_a_catalog_with_a_cycle_names_it(capsys: pytest.CaptureFixture[str]) -> None:
    """A question that needs a fact on a cycle is blocked; the cycle's parts are skipped."""
    status, out, _ = _run(capsys, "plan", CYCLIC, "--keys", "amount")
    assert status == 0
    assert "    blocked: cannot compute score: on a cycle: score -> limit -> score" in out
    assert "  limit    on a cycle: limit -> score -> limit" in out.splitlines()


def test_plan_mermaid_prints_the_flowchart(capsys: pytest.CaptureFixture[str]) -> None:
    """--mermaid prints exactly Flow.to_mermaid()."""
    status, out, _ = _run(
        capsys, "plan", UNREACHABLE, "--keys", "price,quantity,stock", "--mermaid"
    )
    assert status == 0
    assert out.startswith("flowchart LR\n")
    assert '    part_in_stock{{"in_stock"}}\n' in out
    assert '    part_total -->|"total"| part_accept\n' in out


def test_plan_needs_keys(capsys: pytest.CaptureFixture[str]) -> None:
    """--keys is required: argparse stops with status 2 and says so."""
    with pytest.raises(SystemExit) as stop:
        main(["plan", CLAIMS])
    assert stop.value.code == 2
    assert "--keys" in capsys.readouterr().err


# -- show --------------------------------------------------------------------------------


def test_show_prints_a_stored_record(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A record written by to_json() prints as Response.show() does."""
    res = _small_response()
    path = tmp_path / "decision.json"
    path.write_text(res.to_json())
    status, out, _ = _run(capsys, "show", str(path))
    assert status == 0
    assert out == res.show() + "\n"
    assert out == render(json.loads(res.to_json(indent=2))) + "\n"
    assert "accept  forced     false     hard check in_stock failed" in out


def test_show_says_when_a_record_was_edited_after_it_was_made(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """It prints the record, then says on standard error that its content no longer
    gives the hash it carries, and exits with status 1."""
    res = _small_response()
    record = json.loads(res.to_json())
    record["answers"]["accept"]["reason"] = "rule accept"
    path = tmp_path / "decision.json"
    path.write_text(json.dumps(record))
    status, out, err = _run(capsys, "show", str(path))
    assert status == 1
    assert "rule accept" in out
    own, _ = record_hashes(record)
    assert err == (
        f"solvi show: '{path}' was edited after it was made: it carries hash "
        f"{res.hash[:12]}, its content gives {own[:12]}\n"
    )


def test_show_prints_a_resumed_records_request_id_and_notes() -> None:
    """Both say the record is of a resumed request, and what became of its steps."""
    record = json.loads(_small_response().to_json())
    record["request_id"], record["notes"] = "r-7", ["score was interrupted; re-run"]
    lines = render(record).splitlines()
    assert lines[0].startswith("orders  request r-7  hash ")
    assert lines[-2:] == ["notes", "  score was interrupted; re-run"]


def test_show_prints_what_a_stranger_wrote_escaped_and_cut(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A record file whose request text, request id, notes and hash hold escape
    sequences, a carriage return, a bidi override, line breaks and ten megabytes
    prints them escaped and cut: nothing reaches the terminal as a control."""
    res = echo_system().ask({"text": HOSTILE})
    record = json.loads(res.to_json())
    record["request_id"] = "B" * 10_000_000
    record["notes"] = [HOSTILE]
    record["hash"] = "\x1b[2J\x1b[H" + res.hash
    path = tmp_path / "decision.json"
    path.write_text(json.dumps(record))
    status, out, err = _run(capsys, "show", str(path))
    s = HOSTILE_SHOWN
    assert status == 1
    assert out == (
        f"echo  request {'B' * 1000}... (9,999,000 more characters)  hash "
        f"\\x1b[2J\\x1b[H{res.hash[:5]}\n"
        f"  mood  abstained  -         checked: checked raised ValueError: {s}\n"
        f"  said  decided    {s}  rule said\n"
        "steps\n"
        f"  echoed   ok       {record['steps'][0]['duration_ms']:>9.3f} ms\n"
        f"  checked  error    {record['steps'][1]['duration_ms']:>9.3f} ms  ValueError: {s}\n"
        f"  said     ok       {record['steps'][2]['duration_ms']:>9.3f} ms\n"
        "skipped\n"
        f"  mood  inputs missing: checked (checked raised ValueError: {s})\n"
        "notes\n"
        f"  {s}\n"
    )
    own, _ = record_hashes(record)
    assert err == (
        f"solvi show: '{path}' was edited after it was made: it carries hash "
        f"\\x1b[2J\\x1b[H{res.hash[:5]}, its content gives {own[:12]}\n"
    )


def test_show_reads_standard_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`solvi show -` reads the record from standard input."""
    res = _small_response()
    monkeypatch.setattr(sys, "stdin", io.StringIO(res.to_json()))
    status, out, _ = _run(capsys, "show", "-")
    assert status == 0
    assert out == res.show() + "\n"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "solvi show: cannot read '{path}': No such file or directory"),
        ("{not json", "solvi show: '{path}' is not JSON (Expecting property name enclosed in"),
        (
            '{"answers": {}}',
            "solvi show: '{path}' is not a solvi decision record (no catalog, hash, "
            "early_exit, steps, skipped); pass a file written from a Response's to_json()",
        ),
        ("[1, 2]", "solvi show: '{path}' is not a solvi decision record (no catalog, hash,"),
    ],
)
def test_show_rejects_what_is_not_a_record(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str | None, message: str
) -> None:
    """A missing file, broken JSON or another JSON document is one line and exit status 2."""
    path = tmp_path / "record.json"
    if content is not None:
        path.write_text(content)
    status, out, err = _run(capsys, "show", str(path))
    assert status == 2
    assert out == ""
    assert err.startswith(message.format(path=path))
    assert err.count("\n") == 1


# -- the installed console script ----------------------------------------------------------


def _script() -> Path:
    script = Path(sys.executable).parent / "solvi"
    assert script.exists(), f"the solvi console script is not installed next to {sys.executable}"
    return script


def test_console_script_checks_the_claims_example() -> None:
    """The installed `solvi` script runs in a fresh process from the project root."""
    done = subprocess.run(
        [str(_script()), "check", CLAIMS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "ok: no cycles, every part is reached by a question" in done.stdout


def test_console_script_exits_1_on_a_cycle_and_2_on_a_bad_module() -> None:
    """The exit status tells CI about cycles; a bad module gets one line, no traceback."""
    cyclic = subprocess.run(
        [str(_script()), "check", CYCLIC],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert cyclic.returncode == 1
    assert "error: cycle limit -> score -> limit" in cyclic.stdout
    missing = subprocess.run(
        [str(_script()), "check", "tests.solvi.flows.nothing:system"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert missing.returncode == 2
    assert missing.stderr.startswith(
        "solvi check: cannot import module 'tests.solvi.flows.nothing'"
    )
    assert "Traceback" not in missing.stderr


# -- serve is registered ---------------------------------------------------------------------


def test_serve_is_a_subcommand_that_reports_a_bad_target(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`solvi serve` is wired in; a target it cannot load exits 2 before serving anything."""
    status, out, err = _run(capsys, "serve", "examples/claims.py:nope")
    assert status == 2
    assert out == ""
    assert err.startswith("solvi serve: no attribute 'nope' in 'examples/claims.py'")


# -- catalog mistakes, --strict and exit statuses ------------------------------------------


def _module(tmp_path: Path, name: str, body: str) -> str:
    (tmp_path / f"{name}.py").write_text("from solvi import Catalog, System\n" + body)
    return f"{tmp_path / name}.py:cat"


UNGOVERNED = """
cat = Catalog('loans')
@cat.check(hard=True)
def adult(applicant):
    return applicant['age'] >= 18
@cat.rule
def approve(income):
    return income > 1000
"""

TYPO = """
cat = Catalog('typo')
@cat.fn
def income(payslip):
    return payslip * 12
@cat.rule
def approve(income, incom):
    return income > incom
"""


def test_check_reports_a_hard_check_that_governs_nothing_as_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The ungoverning hard check is an error (exit 1), printed once, not also warned."""
    status, out, err = _run(capsys, "check", _module(tmp_path, "ungoverned", UNGOVERNED))
    assert status == 1
    assert err == ""
    assert (
        "error: hard check 'adult' governs no question: no question's flow holds it for any "
        "request, so it never runs and can never fail one; read it in the rules it should "
        "gate (e.g. def approve(adult, ...)), or list it in their "
        "Question(..., requires=['adult'])"
    ) in out
    assert "part 'adult' is reached by no question" not in out
    assert out.rstrip().endswith("1 error, 0 warnings")


def test_check_warns_of_a_misspelt_key_and_strict_fails_on_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A key that looks like a fact is a warning: exit 0, and 1 under --strict."""
    target = _module(tmp_path, "typo", TYPO)
    status, out, _ = _run(capsys, "check", target)
    assert status == 0
    assert (
        "warning: request key 'incom', read by approve, looks like a misspelt name (did you "
        "mean 'income'?)"
    ) in out
    strict, _, _ = _run(capsys, "check", "--strict", target)
    assert strict == 1
    status, out, _ = _run(capsys, "check", "--strict", "--json", target)
    assert status == 1
    assert json.loads(out)["ok"] is False


def test_check_strict_passes_a_clean_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    """The gallery's claims example is clean even under --strict."""
    status, _, _ = _run(capsys, "check", "--strict", CLAIMS)
    assert status == 0


def test_a_type_conflict_in_a_loaded_module_is_a_catalog_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A System that fails on annotations while importing exits 1 (a catalog error)."""
    body = (
        "cat = Catalog('types')\n"
        "@cat.fn\n"
        "def score(x: int) -> str:\n"
        "    return str(x)\n"
        "@cat.rule\n"
        "def approve(score: int) -> bool:\n"
        "    return score > 3\n"
        "system = System(cat)\n"
    )
    (tmp_path / "types_mod.py").write_text("from solvi import Catalog, System\n" + body)
    status, out, err = _run(capsys, "check", f"{tmp_path / 'types_mod.py'}:system")
    assert status == 1
    assert out == ""
    assert "part 'score' returns str (its return annotation) but part 'approve'" in err


def test_a_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown option is argparse's usage error, status 2."""
    with pytest.raises(SystemExit) as info:
        main(["check", "--no-such-option", CLAIMS])
    assert info.value.code == 2


def test_a_module_that_exits_on_import_fails_check(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """sys.exit(0) on import must not let `solvi check` pass: one line, status 2."""
    (tmp_path / "quits.py").write_text("import sys\nsys.exit(0)\n")
    status, out, err = _run(capsys, "check", f"{tmp_path / 'quits.py'}:system")
    assert (status, out) == (2, "")
    assert err.count("\n") == 1
    assert "exited while being imported (SystemExit(0));" in err


def test_a_module_with_a_top_level_argparse_does_not_read_solvis_arguments(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A module that parses arguments on import sees none, so solvi's own are not refused."""
    script = "import argparse\nargparse.ArgumentParser().parse_args()\n"
    (tmp_path / "script.py").write_text(script)
    status, _, err = _run(capsys, "check", f"{tmp_path / 'script.py'}:system")
    assert status == 2
    assert err.startswith("solvi check: no attribute 'system' in ")
    assert "unrecognized arguments" not in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'\xff\xfe{"a": 1}', "is not UTF-8 text (byte 0xff at offset 0: invalid start byte);"),
        (b"[" * 100_000 + b"]" * 100_000, "nests arrays or objects too deeply to be read;"),
        (b'{"a": ' + b"1" * 5000 + b"}", "holds an integer of more than "),
    ],
    ids=["not UTF-8", "too deep", "huge integer"],
)
def test_show_refuses_what_python_cannot_read_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, message: str
) -> None:
    """Bytes that are not UTF-8, or JSON Python cannot decode, are status 2, not a traceback."""
    path = tmp_path / "record.json"
    path.write_bytes(content)
    status, out, err = _run(capsys, "show", str(path))
    assert (status, out) == (2, "")
    assert err.startswith(f"solvi show: '{path}' {message}")
    assert err.count("\n") == 1


def test_show_refuses_a_device_a_directory_and_an_endless_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What is not a regular file, and more than the cap, is one line and status 2 at
    once: a symlink to /dev/zero is not read until memory runs out."""
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    pipe = tmp_path / "pipe.json"
    os.mkfifo(pipe)  # no writer: opening it to read would wait for ever
    for path, why in (
        (zero, "not a regular file; pass a file written from a Response's to_json()"),
        (pipe, "not a regular file; pass a file written from a Response's to_json()"),
        (tmp_path, "Is a directory"),
    ):
        status, out, err = _run(capsys, "show", str(path))
        assert (status, out) == (2, "")
        assert err == f"solvi show: cannot read '{path}': {why}\n"
    monkeypatch.setattr(cli, "MAX_SHOW_BYTES", 1000)
    big = tmp_path / "big.json"
    big.write_text(" " * 1001)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b" " * 1001)))
    for given, name in ((str(big), repr(str(big))), ("-", "standard input")):
        status, out, err = _run(capsys, "show", given)
        assert (status, out) == (2, "")
        assert err.startswith(
            f"solvi show: cannot read {name}: larger than 1,000 bytes; pass a file"
        )


def test_show_prints_nothing_of_a_damaged_record(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A record that cannot be shown whole is not shown in part before its error."""
    record = json.loads(_small_response().to_json())
    del record["catalog_version"]
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record))
    status, out, err = _run(capsys, "show", str(path))
    assert (status, out) == (2, "")
    assert "is a damaged decision record" in err


def test_plan_with_a_key_no_request_may_bring_is_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A hard check in --keys is refused like a bad argument (status 2), naming the key."""
    status, out, err = _run(capsys, "plan", CLAIMS, "--keys", "policy_in_force")
    assert (status, out) == (2, "")
    assert err.startswith(
        "solvi plan: --keys policy_in_force: request key 'policy_in_force' sets the hard check"
    )
    assert err.count("\n") == 1


# -- where an import failed, factories, broken pipes, repeated --keys ------------------------

DEEP = """\
import json
from solvi import Catalog

def helper():
    return 1 / 0

def parse():
    return json.loads("{")

cat = Catalog("deep")
"""


def test_an_import_failure_names_the_line_of_the_users_file_and_how_to_rerun_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The line in the target's file where it failed, and a command that fits the target."""
    (tmp_path / "deep.py").write_text(DEEP + "X = helper()\n")
    (tmp_path / "lib.py").write_text(DEEP + "Y = parse()\n")
    monkeypatch.chdir(tmp_path)
    status, out, err = _run(capsys, "check", "deep.py:cat")
    assert (status, out) == (2, "")
    assert err == (
        "solvi check: importing module 'deep.py' failed at deep.py, line 5 (in helper): "
        "ZeroDivisionError: division by zero; fix the module so that `python deep.py` works\n"
    )
    # A module target; the error is raised inside json, so the user's own line is named.
    status, _, err = _run(capsys, "check", "lib:cat")
    assert status == 2
    assert err.startswith(
        "solvi check: importing module 'lib' failed at lib.py, line 8 (in parse): JSONDecodeError: "
    )
    assert err.endswith("; fix the module so that `python -c 'import lib'` works\n")


def test_an_import_failure_outside_the_targets_file_names_the_last_frame(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package that fails before the target's module is reached: the innermost frame."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from pkg import settings\n")
    (tmp_path / "pkg" / "settings.py").write_text("import os\n\nURL = os.environ['DB_URL']\n")
    (tmp_path / "pkg" / "mod.py").write_text("cat = None\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DB_URL", raising=False)
    status, _, err = _run(capsys, "check", "pkg.mod:cat")
    assert status == 2
    assert err == (
        "solvi check: importing module 'pkg.mod' failed at pkg/settings.py, line 3 (in "
        "<module>): KeyError: 'DB_URL'; fix the module so that `python -c 'import pkg.mod'` "
        "works\n"
    )


FACTORY = """
from solvi import Catalog, System

cat = Catalog("made")
calls = []

@cat.rule
def approve(income):
    return income > 1000

def make():
    calls.append(1)
    return System(cat)
"""


def test_check_and_plan_accept_a_factory_as_serve_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A function without arguments that returns a System is called (once) by check and plan."""
    (tmp_path / "made.py").write_text(FACTORY)
    target = f"{tmp_path / 'made.py'}:make"
    status, out, err = _run(capsys, "check", target)
    assert (status, err) == (0, "")
    assert out.startswith(f"checked catalog made ({target}): 1 part, 1 question\n")
    assert sys.modules["made"].calls == [1]
    status, out, err = _run(capsys, "plan", target, "--keys", "income")
    assert (status, err) == (0, "")
    assert "  1. approve  phase 1  rule\n" in out
    assert sys.modules["made"].calls == [1, 1]


def test_plan_adds_up_repeated_keys(capsys: pytest.CaptureFixture[str]) -> None:
    """`--keys claim --keys documents` plans for both keys, as `--keys claim,documents`."""
    status, out, err = _run(capsys, "plan", CLAIMS, "--keys", "claim", "--keys", "documents")
    assert (status, out, err) == (0, CLAIMS_PLAN, "")
    status, out, _ = _run(capsys, "plan", CLAIMS, "--keys", "claim,documents", "--keys", "claim")
    assert (status, out) == (0, CLAIMS_PLAN)


@pytest.mark.parametrize(
    ("argv", "buffering"),
    [
        (["plan", CLAIMS, "--keys", "claim,documents"], 1),
        (["show", "-"], 1),
        (["show", "-"], -1),
    ],
    ids=["plan, while printing", "show, while printing", "show, on the last flush"],
)
def test_a_reader_that_goes_away_ends_the_command_quietly(argv: list[str], buffering: int) -> None:
    """`solvi ... | head -2`: no BrokenPipeError traceback, exit status 141."""
    record = _small_response().to_json()
    code = (
        "import sys\n"
        "from solvi.cli import main\n"
        f"sys.stdout = open(sys.stdout.fileno(), 'w', buffering={buffering}, closefd=False)\n"
        f"sys.exit(main({argv!r}))\n"
    )
    reader, writer = os.pipe()
    os.close(reader)  # nobody reads: the first write breaks the pipe
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            input=record,
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=60,
        )
    finally:
        os.close(writer)
    assert (done.returncode, done.stderr) == (141, "")
