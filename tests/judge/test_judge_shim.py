"""The official judge: prompt loaded from the checkout alone, upstream's exact request, upstream's label rule."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest

from lme.core import command_names
from lme.judge import official as judge_official
from lme.cli import judge_shim
from lme.core.errors import UserError
from lme.judge.official import JudgeInputError, label_from_reply, load_prompt_builder
from lme.models.providers import Gateway, ProviderError, ProviderSettings
from lme.core.records import Completion, Verdict
from helpers_data import judge_json
from upstream_standin import make_upstream_tree, standin_prompt

FAST = ProviderSettings(timeout_s=5.0, max_attempts=3, backoff_base=0.01, backoff_max=0.05)
DUMMY_KEYS = ("sk-test-DUMMY-openai-key-0000", "sk-ant-test-DUMMY-anthropic-key-0000")

CASES = [
    ("single-session-user", "q_ssu"),
    ("multi-session", "q_ms"),
    ("temporal-reasoning", "q_tr"),
    ("knowledge-update", "q_ku"),
    ("single-session-preference", "q_pref"),
    ("multi-session", "q_ms_abs"),
]


@pytest.fixture
def root(tmp_path):
    return make_upstream_tree(tmp_path)


class ScriptedLLM:
    """An in-process LLM that returns one fixed reply and remembers the requests."""

    def __init__(self, reply: str, model: str = "gpt-4o-2024-08-06", host: str | None = "api.openai.com") -> None:
        self.reply, self.model, self.host, self.requests = reply, model, host, []

    def complete(self, request):
        self.requests.append(request)
        return Completion(text=self.reply, tokensIn=5, tokensOut=1, latencyMs=1.0, provider=request.provider,
                          model=self.model, endpoint_host=self.host)

    def embed(self, provider, model, texts):
        raise AssertionError("the judge never embeds")


@pytest.mark.parametrize(("qtype", "qid"), CASES)
def test_judge_request_is_byte_for_byte_what_upstream_sends(fake_llm, root, qtype, qid):
    question, answer, hypothesis = "How long was the trip?", "18 days", "It took 19 days."
    verdict = judge_json(qtype, question, answer, hypothesis, root, question_id=qid, llm=Gateway(FAST))
    prompt = standin_prompt(qtype, question, answer, hypothesis, abstention=qid.endswith("_abs"))
    ours = fake_llm.requests[-1]
    assert ours["path"] == "/v1/chat/completions"
    assert ours["body"] == {
        "model": "gpt-4o-2024-08-06",
        "messages": [{"role": "user", "content": prompt}],
        "n": 1,
        "temperature": 0,
        "max_tokens": 10,
    }
    # the same call made the way upstream makes it, through the same SDK: identical bytes on the wire
    upstream_client = openai.OpenAI(max_retries=0)
    upstream_client.chat.completions.create(
        model="gpt-4o-2024-08-06", messages=[{"role": "user", "content": prompt}], n=1, temperature=0, max_tokens=10
    )
    assert fake_llm.requests[-1]["raw"] == ours["raw"]
    assert verdict["prompt_sha256"] and verdict["requested_model"] == "gpt-4o"
    assert verdict["model"] == "gpt-4o-2024-08-06"


def test_abstention_is_decided_by_the_id_not_the_type(root):
    llm = ScriptedLLM("yes")
    judge_json("temporal-reasoning", "Q?", "not asked", "I don't know", root, question_id="abc_abs", llm=llm)
    judge_json("temporal-reasoning", "Q?", "18", "18", root, question_id="abc", llm=llm)
    assert llm.requests[0].messages[0]["content"].startswith("STANDIN abstention")
    assert llm.requests[1].messages[0]["content"].startswith("STANDIN temporal")


@pytest.mark.parametrize(
    ("reply", "label"),
    [("Yes, because the response says 18.", True), ("no", False), ("YES", True), ("  yes.\n", True),
     ("No.", False), ("The answer is yes", True), ("Nope", False)],
)
def test_label_follows_upstreams_substring_rule(reply, label):
    assert label_from_reply(reply) is label


def test_verdict_keeps_the_raw_reply_and_label(root):
    verdict = judge_json("multi-session", "Q?", "A", "A", root, question_id="q", llm=ScriptedLLM("Yes, it does."))
    assert Verdict.from_dict(verdict).to_dict() == verdict
    assert verdict["raw"] == "Yes, it does." and verdict["label"] is True


@pytest.mark.parametrize("reply", ["", "   ", "\n"])
def test_empty_judge_reply_is_labelled_false_as_upstream_does(root, reply):
    verdict = judge_json("multi-session", "Q?", "A", "A", root, question_id="q", llm=ScriptedLLM(reply))
    assert verdict["label"] is False and verdict["raw"] == reply  # 'yes' in '' is False; the reply is kept


def test_unknown_question_type_names_the_item(root):
    with pytest.raises(JudgeInputError, match="q_odd") as info:
        judge_json("open-domain", "Q?", "A", "A", root, question_id="q_odd", llm=ScriptedLLM("yes"))
    assert info.value.kind == "judge_input"
    assert isinstance(info.value, UserError)


def test_only_the_prompt_function_is_loaded_never_the_module(root):
    # the stand-in raises at import time and on its other helpers; loading must not trigger either
    builder = load_prompt_builder(root)
    assert builder.build("multi-session", "Q", "A", "R") == "STANDIN generic: Q=Q A=A R=R"
    assert "helper_that_must_not_be_loaded" not in builder.build.__globals__
    assert "this_module_does_not_exist" not in builder.build.__globals__


def test_the_checkout_is_never_modified(root):
    path = root / "src" / "evaluation" / "evaluate_qa.py"
    before = path.read_bytes(), sorted(p.name for p in path.parent.iterdir())
    judge_json("multi-session", "Q", "A", "R", root, question_id="q", llm=ScriptedLLM("yes"))
    assert (path.read_bytes(), sorted(p.name for p in path.parent.iterdir())) == before


def test_prompt_function_is_cached_until_the_file_changes(root):
    first = load_prompt_builder(root)
    assert load_prompt_builder(root) is first
    path = root / "src" / "evaluation" / "evaluate_qa.py"
    path.write_text(path.read_text().replace("STANDIN generic", "STANDIN generic v2"))
    second = load_prompt_builder(root)
    assert second is not first and second.template_sha256 != first.template_sha256
    assert second.build("multi-session", "Q", "A", "R").startswith("STANDIN generic v2")


@pytest.mark.parametrize("where", ["missing", "no_function", "none"])
def test_missing_checkout_or_function_says_how_to_get_it(tmp_path, where):
    root = {"missing": tmp_path / "nope", "no_function": make_upstream_tree(tmp_path, with_function=False),
            "none": None}[where]
    with pytest.raises(UserError, match=command_names.SETUP):
        judge_json("multi-session", "Q", "A", "R", root, question_id="q", llm=ScriptedLLM("yes"))


def test_official_only_for_openai_pinned_gpt4o_and_upstreams_prompt(root, monkeypatch):
    args = ("multi-session", "Q", "A", "R", root)
    # the stand-in's function is not upstream's: never official
    assert judge_json(*args, question_id="q", llm=ScriptedLLM("yes"))["official"] is False
    standin_sha = load_prompt_builder(root).function_sha256
    monkeypatch.setattr(judge_official, "UPSTREAM_FUNCTION_SHA256", frozenset({standin_sha}))
    official = judge_json(*args, question_id="q", llm=ScriptedLLM("yes"))
    assert official["official"] is True and official["template_sha256"]
    mini = judge_json(*args, model="gpt-4o-mini", question_id="q", llm=ScriptedLLM("yes", "gpt-4o-mini-2024-07-18"))
    assert mini["official"] is False and mini["model"] == "gpt-4o-mini-2024-07-18"
    other = judge_json(*args, provider="anthropic", model="claude-x", question_id="q", llm=ScriptedLLM("yes", "claude-x"))
    assert other["official"] is False and other["provider"] == "anthropic"
    with pytest.raises(judge_official.JudgeModelMismatch, match="answered as 'gpt-4o-2024-11-20'"):
        judge_json(*args, question_id="q", llm=ScriptedLLM("yes", "gpt-4o-2024-11-20"))  # a moved alias is refused
    elsewhere = judge_json(*args, question_id="q", llm=ScriptedLLM("yes", host="127.0.0.1:8080"))
    assert elsewhere["official"] is False and elsewhere["endpoint_host"] == "127.0.0.1:8080"


def test_real_upstream_function_hash_is_recognised_when_the_mirror_is_present(tmp_path):
    import subprocess
    from pathlib import Path

    mirror = Path("/work/.mirror/xiaowu0162+LongMemEval/repo")
    if not mirror.exists():
        pytest.skip("upstream mirror not present")
    text = subprocess.run(["git", "-C", str(mirror), "show", "HEAD:src/evaluation/evaluate_qa.py"],
                          capture_output=True, check=True).stdout
    target = tmp_path / "up" / "src" / "evaluation" / "evaluate_qa.py"
    target.parent.mkdir(parents=True)
    target.write_bytes(text)
    assert load_prompt_builder(tmp_path / "up").is_upstream


def test_no_key_appears_in_verdicts_or_judge_errors(fake_llm, root):
    texts = [json.dumps(judge_json("multi-session", "Q", "A", "A", root, question_id="q", llm=Gateway(FAST)))]
    fake_llm.fail_next("401")
    with pytest.raises(ProviderError) as info:
        judge_json("multi-session", "Q", "A", "A", root, question_id="q", llm=Gateway(FAST))
    texts.append(str(info.value))
    for text in texts:
        for key in DUMMY_KEYS:
            assert key not in text


def test_cli_prints_the_prompt_without_calling_a_model(root, capsys):
    code = judge_shim.main(["--longmemeval-root", str(root), "--print-prompt", "--question-type",
                            "knowledge-update", "--question-id", "x", "--question", "Q", "--answer", "A",
                            "--hypothesis", "R"])
    assert code == 0
    assert capsys.readouterr().out.strip() == standin_prompt("knowledge-update", "Q", "A", "R")


def test_cli_judges_a_hypothesis_file_in_upstream_format(fake_llm, root, tmp_path, capsys):
    refs = [{"question_id": "a1", "question_type": "multi-session", "question": "Q1", "answer": "blue"},
            {"question_id": "a2", "question_type": "temporal-reasoning", "question": "Q2", "answer": 3}]
    (tmp_path / "ref.json").write_text(json.dumps(refs))
    hyps = tmp_path / "hyp.jsonl"
    hyps.write_text('{"question_id": "a1", "hypothesis": "It is blue"}\n{"question_id": "a2", "hypothesis": "5"}\n')
    code = judge_shim.main(["--longmemeval-root", str(root), "--hyp-file", str(hyps),
                            "--ref-file", str(tmp_path / "ref.json"), "--project", str(tmp_path)])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["judged"] == 2 and summary["correct"] == 1
    lines = [json.loads(x) for x in (tmp_path / "hyp.jsonl.eval-results-gpt-4o").read_text().splitlines()]
    assert lines[0]["autoeval_label"] == {"model": "gpt-4o-2024-08-06", "label": True}
    assert lines[1]["autoeval_label"]["label"] is False


# ---------------------------------------------------------------------- file mode: bad inputs, safe output

REFS = [{"question_id": "a1", "question_type": "multi-session", "question": "Q1", "answer": "blue"},
        {"question_id": "a2", "question_type": "temporal-reasoning", "question": "Q2", "answer": 3}]
HYPS = '{"question_id": "a1", "hypothesis": "It is blue"}\n{"question_id": "a2", "hypothesis": "5"}\n'


@pytest.fixture
def files(tmp_path):
    (tmp_path / "ref.json").write_text(json.dumps(REFS))
    (tmp_path / "hyp.jsonl").write_text(HYPS)
    return tmp_path / "hyp.jsonl", tmp_path / "ref.json"


def _run_file_mode(root, hyp, ref, *extra):
    from lme.core.errors import run_main

    return run_main(judge_shim.main, ["--longmemeval-root", str(root), "--hyp-file", str(hyp),
                                      "--ref-file", str(ref), "--project", str(hyp.parent), *extra])


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def test_a_failed_rerun_leaves_the_previous_results_file_as_it_was(fake_llm, root, files, capsys):
    hyp, ref = files
    out = hyp.parent / "hyp.jsonl.eval-results-gpt-4o"
    assert _run_file_mode(root, hyp, ref) == 0
    before = out.read_bytes()
    assert len(before.splitlines()) == 2
    fake_llm.fail_next("401")
    assert _run_file_mode(root, hyp, ref, "--no-cache") == 2  # the cache would answer without a call
    assert out.read_bytes() == before
    assert "as it was" in _one_error_line(capsys)
    left = [p.name for p in hyp.parent.iterdir() if p.name.startswith(".") and p.name != ".longmemeval-benchmarks"]
    assert left == []  # no temp file left behind


@pytest.mark.parametrize(("refs", "named"), [
    ([{"question_id": "a1", "question": "Q1", "answer": "blue"}], "record 1 (question_id a1)"),
    ([1, 2], "record 1"),
    ({"question_id": "a1", "question_type": ["multi-session"], "question": "Q", "answer": "A"}, "question_type"),
])
def test_a_ref_record_the_judge_cannot_use_is_one_line_naming_file_and_record(fake_llm, root, files, capsys,
                                                                              refs, named):
    hyp, ref = files
    ref.write_text(json.dumps(refs))
    assert _run_file_mode(root, hyp, ref) == 2
    err = _one_error_line(capsys)
    assert str(ref) in err and named in err
    assert fake_llm.requests == [] and not (hyp.parent / "hyp.jsonl.eval-results-gpt-4o").exists()


def test_swapped_hyp_and_ref_files_are_named_as_such(fake_llm, root, files, capsys):
    hyp, ref = files
    assert _run_file_mode(root, ref, hyp, "--out", str(hyp.parent / "out.jsonl")) == 2
    err = _one_error_line(capsys)
    assert "swapped" in err and str(hyp) in err and "record 1 (question_id a1)" in err
    assert fake_llm.requests == []


def test_a_hypothesis_line_without_hypothesis_is_named(fake_llm, root, files, capsys):
    hyp, ref = files
    hyp.write_text('{"question_id": "a1", "hypothesis": "x"}\n{"question_id": "a2"}\n')
    assert _run_file_mode(root, hyp, ref) == 2
    err = _one_error_line(capsys)
    assert str(hyp) in err and "record 2 (question_id a2)" in err and "hypothesis" in err
    assert fake_llm.requests == []


@pytest.mark.parametrize("where", ["directory", "missing parent"])
def test_an_unwritable_out_is_one_line_before_any_judge_call(fake_llm, root, files, capsys, where):
    hyp, ref = files
    out = hyp.parent / "outdir" if where == "directory" else hyp.parent / "nope" / "out.jsonl"
    if where == "directory":
        out.mkdir()
    assert _run_file_mode(root, hyp, ref, "--out", str(out)) == 2
    assert str(out) in _one_error_line(capsys)
    assert fake_llm.requests == []


def test_a_non_utf8_ref_file_is_one_line(fake_llm, root, files, capsys):
    hyp, ref = files
    ref.write_bytes(b"\xff\xfe[]")
    assert _run_file_mode(root, hyp, ref) == 2
    assert str(ref) in _one_error_line(capsys)


def test_file_mode_writes_the_bytes_upstreams_json_dumps_writes_for_non_ascii_hypotheses(fake_llm, root, tmp_path):
    entries = [  # as a user's script writes them: raw UTF-8, its own key order, a number, a raw U+2028
        {"question_id": "n1", "hypothesis": "Un café, naïve résumé"},
        {"question_id": "n2", "hypothesis": "東京 에서 🎉"},
        {"hypothesis": 'She said "yes" \\ then left', "question_id": "n3", "note": "ü"},
        {"question_id": "n4", "hypothesis": "two\nlines: café"},
        {"question_id": "n5", "hypothesis": 5},
        {"question_id": "n6", "hypothesis": "a\u2028b, 🎉"},
    ]
    gold = {"n1": "café", "n2": "tokyo", "n3": '"yes"', "n4": "café", "n5": 3, "n6": "🎉"}
    refs = [{"question_id": q, "question_type": "multi-session", "question": f"Q {q}", "answer": a}
            for q, a in gold.items()]
    (tmp_path / "ref.json").write_text(json.dumps(refs, ensure_ascii=False), encoding="utf-8")
    hyp = tmp_path / "hyp.jsonl"
    hyp.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), encoding="utf-8")
    assert _run_file_mode(root, hyp, tmp_path / "ref.json") == 0

    # what upstream's evaluate_qa.py writes: each line read by text-mode readlines and json.loads, autoeval_label
    # added to that dict, then print(json.dumps(entry)) (the fake judge says yes when the gold is in the hypothesis)
    with open(hyp, encoding="utf-8") as fh:
        upstream_entries = [json.loads(line) for line in fh.readlines()]
    expected = ""
    for entry in upstream_entries:
        label = str(gold[entry["question_id"]]).lower() in str(entry["hypothesis"]).lower()
        entry["autoeval_label"] = {"model": "gpt-4o-2024-08-06", "label": label}
        expected += json.dumps(entry) + "\n"
    written = Path(f"{hyp}.eval-results-gpt-4o").read_bytes()
    assert written == expected.encode("ascii")
    assert len(written.splitlines()) == 6 and {e["autoeval_label"]["label"] for e in upstream_entries} == {True, False}


# ---------------------------------------------------------------------- file mode: concurrent, cached


def _sample_hypotheses(tmp_path):
    from run_project import SAMPLE

    items = json.loads(SAMPLE.read_text())
    hyp = tmp_path / "hyps.jsonl"
    hyp.write_text("".join(json.dumps({"question_id": it["question_id"],
                                       "hypothesis": f"It is {it['answer']}" if i % 3 else "no idea"}) + "\n"
                           for i, it in enumerate(items)))
    return hyp, SAMPLE, items


def test_hyp_file_at_concurrency_8_writes_the_same_bytes_as_one_at_a_time(fake_llm, root, tmp_path):
    from run_project import register_answers

    register_answers(fake_llm)
    fake_llm.latency = (0.0, 0.03)  # replies come back out of order
    hyp, ref, items = _sample_hypotheses(tmp_path)
    outs = {}
    for n in ("1", "8"):
        project = tmp_path / f"project-{n}"  # each its own cache: both really call the judge
        project.mkdir()
        outs[n] = tmp_path / f"out-{n}.jsonl"
        assert _run_file_mode(root, hyp, ref, "--concurrency", n, "--project", str(project), "--out",
                              str(outs[n])) == 0
    assert len(fake_llm.requests) == 2 * len(items)
    assert outs["8"].read_bytes() == outs["1"].read_bytes()
    lines = [json.loads(x) for x in outs["8"].read_text().splitlines()]
    assert [x["question_id"] for x in lines] == [it["question_id"] for it in items]  # the input's order
    assert {x["autoeval_label"]["label"] for x in lines} == {True, False}


def test_an_interrupted_file_judge_keeps_its_paid_verdicts_and_a_rerun_pays_only_the_rest(fake_llm, root, tmp_path,
                                                                                           capsys):
    from run_project import register_answers

    register_answers(fake_llm)
    hyp, ref, items = _sample_hypotheses(tmp_path)
    default, seen = fake_llm._default_judge, []

    def judge_then_fail_the_fifth(prompt):
        seen.append(prompt)
        if len(seen) == 4:
            fake_llm.fail_next("401")  # the next request fails: judging stops there
        return default(prompt)

    fake_llm.judge_fn = judge_then_fail_the_fifth
    out = Path(f"{hyp}.eval-results-gpt-4o")
    assert _run_file_mode(root, hyp, ref, "--concurrency", "1") == 2
    assert "a re-run does not pay for them again" in _one_error_line(capsys) and not out.exists()
    assert len(fake_llm.requests) == 5  # no job starts after the failure
    assert _run_file_mode(root, hyp, ref, "--concurrency", "4") == 0
    assert len(fake_llm.requests) == 5 + len(items) - 4  # the four verdicts received came from the cache
    assert len(out.read_text().splitlines()) == len(items)


def test_hyp_file_help_says_an_interrupted_judge_loses_no_paid_verdict(capsys):
    with pytest.raises(SystemExit):
        judge_shim.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--concurrency N" in text and "loses no paid verdict" in text and "run_benchmark.py --hypotheses" in text
