"""Retrieval on the shipped handbook: recall@3 and time per query of keyword, vector and hybrid search.

The documents and questions are `miniagent/retrieval/data/docs/{en,zh}` (14 files and 23 questions
per language, each question with the file(s) that answer it). Some questions use the
handbook's exact names and codes (HR-7, SEC, Ines Varga), where keywords win; others
paraphrase it ("vacation days" for "annual leave", "retirement savings" for "pension"),
where a semantic embedding can win. The claim (issue 14): hybrid search, reciprocal rank
fusion of the two, is at least as good as the best single method, in each language.

"vector" is WordLlama's bundled static embedding (`retrieval.local_embedder`). One more
row per language, "vector (mock API)", uses the offline mock's `/v1/embeddings`: its
vectors are hashed bags of words, lexical and not semantic, so that row measures the
plumbing of `api_embedder`, not meaning, and no claim is made about it.
"""

from __future__ import annotations

from claims import Claim
from miniagent import retrieval

K = 3
LANGUAGES = ("en", "zh")


def measure(k: int = K) -> dict[str, dict[str, dict[str, float]]]:
    """{language: {method: {"recall": r, "ms": t}}}, plus "vector (mock API)" per language."""
    local, mock = retrieval.local_embedder(), retrieval.api_embedder(offline=True)
    report = {}
    for language in LANGUAGES:
        questions = retrieval.questions(language)
        report[language] = retrieval.evaluate(retrieval.build(retrieval.DATA / language, local), questions, k)
        on_mock = retrieval.evaluate(retrieval.build(retrieval.DATA / language, mock), questions, k, ["vector"])
        report[language]["vector (mock API)"] = on_mock["vector"]
    return report


def claims(report: dict, k: int = K) -> list[Claim]:
    out = []
    for language in LANGUAGES:
        scores = report[language]
        best = max(("keyword", "vector"), key=lambda m: scores[m]["recall"])
        out.append(Claim(f"hybrid ≥ best single method ({language})",
                         f"hybrid recall@{k} {scores['hybrid']['recall']:.3f}, best single {best} "
                         f"{scores[best]['recall']:.3f}", "at least as good",
                         scores["hybrid"]["recall"] >= scores[best]["recall"]))
    return out


def rows(report: dict) -> list[dict]:
    return [{"language": language, "method": method, f"recall@{K}": f"{m['recall']:.3f}",
             "ms per query": f"{m['ms']:.2f}"}
            for language, methods in report.items() for method, m in methods.items()]


def run() -> tuple[str, list[dict], list[Claim]]:
    report = measure()
    title = (f"Retrieval on the shipped handbook (14 files, 23 questions per language): recall@{K} and time per "
             "query; vector = WordLlama 256-d bundled in its wheel; 'vector (mock API)' = the offline mock's "
             "hashed bag of words (plumbing, not meaning)")
    return title, rows(report), claims(report)
