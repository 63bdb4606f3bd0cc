"""Retrieval (RAG) end to end: documents → chunks → an index → passages with citations.

An agent knows only what is in its request. To answer from a handbook it has never
seen, we find the few passages that matter and put them in front of it, each with
the place it came from, so its answer can cite its sources and a reader can check them.

1. `load(folder)`: every Markdown or text file under a folder, as `Document`s.
2. `split(document, size, overlap)`: `Chunk`s of at most `size` characters, cut at
   paragraph, then sentence boundaries (Chinese 。！？ included), overlapping by up
   to `overlap` characters so a fact on a boundary is whole in one of them. Each
   chunk knows its source and its exact place: `document.text[chunk.start:chunk.end]
   == chunk.text`, and the lines it spans, for the citation.
3. `Index`: one SQLite database (standard library) with the chunks, a full-text
   index (FTS5) and one embedding per chunk. `search(query, k, method)`:
   - "keyword": FTS5's BM25 ranking. Words are matched by their stem ("holidays"
     finds "holiday"). Chinese has no spaces between words, so both the text and the
     query are cut into overlapping pairs of characters (年假 → 年假; 带薪年假 → 带薪
     薪年 年假), the way search engines index CJK text. Why not FTS5's trigram
     tokenizer? Most Chinese words are two characters long, and a trigram index can
     never match a two-character term. Every query term is quoted, so nothing a user
     types is read as FTS5 syntax (AND, NEAR, "*", column filters, quotes).
   - "vector": the cosine similarity of embeddings (below).
   - "hybrid": both rankings fused by reciprocal rank fusion (`rrf`).
4. `search_tool(index)`: a `Tool` that returns passages as `[en/leave.md:3-5] text`.
5. `evaluate(index, questions, k)`: recall@k per method, and the time per query.

Embeddings: any function from a list of texts to a list of vectors.
- `local_embedder()`: WordLlama (PyPI `wordllama`, 0.4.0.post1, MIT licence). Its wheel
  (19 MB for CPython 3.11 on Linux) ships the weights: `l2_supercat_256.safetensors`,
  16 MB, one 256-number vector per token of the Llama 2 tokenizer (32,000 tokens),
  distilled from Llama 2's token embeddings and trained on sentence pairs. A text's
  vector is the normalised average of its tokens' vectors: a static embedding on the
  CPU (numpy, plus Hugging Face's `tokenizers` to cut text into tokens), loaded in about
  0.4 s, then about 0.02 ms per text; nothing is downloaded at run time. It was trained
  on English, and the Llama 2 tokenizer knows only common Chinese characters (it cuts
  带, 薪, 假 into bytes), so it is weaker in Chinese: the measured recall says how much. Its loader looks for the
  bundled tokenizer in the wrong folder and would then try to download it; we point
  it at the package's own folder and forbid downloads.
- `api_embedder()`: an OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Qwen,
  GLM, Ollama, ...). Offline it is the bundled mock, whose vectors are a hashed bag of
  words: lexical, not semantic (synonyms share nothing). Measured offline, it checks
  the plumbing, not meaning.

Vectors are stored as float32 blobs in the chunks table and compared with numpy (a
brute-force scan: 1,000s of chunks take well under a millisecond). The SQLite vector
extension sqlite-vec (`sqlite-vec`, 0.1.9, 160 KB wheel, MIT/Apache-2.0) does the
same scan in SQL with `vec_distance_cosine`; it is used when it loads, but it needs
`sqlite3.Connection.enable_load_extension`, which many Python builds (this course's
included: CPython 3.11.7 built with pyenv) leave out. `Index.vector_engine` says
which one runs.

numpy and wordllama are imported only inside the functions that need them:
`import miniagent` stays light, and keyword search needs neither.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import sqlite3
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from miniagent.tools import Tool

DATA = Path(__file__).parent / "data" / "docs"   # the shipped handbook: en/ and zh/, each with questions.json
SUFFIXES = (".md", ".markdown", ".txt")
MAX_FILE_BYTES = 1_000_000       # a larger file is skipped, not read: a folder can hold anything
MAX_FILES = 10_000
MAX_QUERY_CHARS = 2_000          # a longer query is cut: a query is a question, not a document
MAX_QUERY_TERMS = 64
RRF_K = 60                       # the constant of reciprocal rank fusion (Cormack et al., 2009)
METHODS = ("keyword", "vector", "hybrid")

Embedder = Callable[[list[str]], Sequence[Sequence[float]]]


@dataclass(frozen=True)
class Document:
    source: str   # where it came from, relative to the folder's parent: "en/leave.md"
    text: str

    @property
    def title(self) -> str:
        """The first Markdown heading, or the file name."""
        match = re.search(r"^#+\s+(.+)$", self.text, re.MULTILINE)
        return match.group(1).strip() if match else Path(self.source).stem


@dataclass(frozen=True)
class Chunk:
    source: str
    start: int        # character offsets in the document: text == document.text[start:end]
    end: int
    line_start: int   # 1-based, inclusive: the lines a reader opens to check the citation
    line_end: int
    text: str
    title: str = ""   # the document's title, indexed with the chunk (a chunk often lacks its heading)

    @property
    def citation(self) -> str:
        return f"[{self.source}:{self.line_start}-{self.line_end}]"


@dataclass(frozen=True)
class Result:
    chunk: Chunk
    score: float      # higher is better; its scale depends on the method
    method: str

    @property
    def source(self) -> str:
        return self.chunk.source

    @property
    def text(self) -> str:
        return self.chunk.text

    @property
    def citation(self) -> str:
        return self.chunk.citation


# --- 1. load ---------------------------------------------------------------------------------------


def load(folder: str | os.PathLike) -> list[Document]:
    """Every .md/.markdown/.txt file under `folder`, sorted by path, as UTF-8 text.

    A file's source is its path relative to the folder's parent ("en/leave.md" for
    folder "docs/en"), so citations from two folders never collide. Files larger than
    MAX_FILE_BYTES, empty files and symbolic links are skipped; bytes that are not
    UTF-8 become U+FFFD rather than an exception.
    """
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"no such folder: {str(root)!r} (load() wants a folder of .md or .txt files)")
    documents = []
    for path in sorted(root.rglob("*")):
        if len(documents) >= MAX_FILES:
            break
        if path.suffix.lower() not in SUFFIXES or path.is_symlink() or not path.is_file():
            continue
        if path.stat().st_size > MAX_FILE_BYTES:
            continue
        text = path.read_bytes().decode("utf-8", errors="replace").replace("\r\n", "\n")
        if text.strip():
            documents.append(Document(path.relative_to(root.parent).as_posix(), text))
    return documents


# --- 2. split --------------------------------------------------------------------------------------

_PARAGRAPH = re.compile(r"\S(?:.*?\S)?(?=\s*\n\s*\n|\s*$)", re.DOTALL)   # text between blank lines
_SENTENCE_END = re.compile(r"[.!?]+(?=\s)|[。！？]+[”」』）]?|\n")   # "3.5" and "example.com" are no ends


def split(document: Document, size: int = 500, overlap: int = 100) -> list[Chunk]:
    """Cut a document into chunks of at most `size` characters with exact positions.

    First the text is cut into pieces: paragraphs; a paragraph longer than `size` into
    sentences; a sentence longer than `size` into slices of `size` characters. Then
    consecutive pieces are packed into chunks up to `size` characters. The next chunk
    starts with the last pieces of the previous one that fit in `overlap` characters
    (it always moves forward by at least one piece). No chunk is empty or only space.
    """
    if not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive number of characters, got {size!r}")
    if not isinstance(overlap, int) or not 0 <= overlap < size:
        raise ValueError(f"overlap must be at least 0 and less than size ({size}), got {overlap!r}")
    text = document.text
    pieces = list(_pieces(text, size))
    newlines = [i for i, char in enumerate(text) if char == "\n"]
    title = document.title
    chunks: list[Chunk] = []
    i = 0
    while i < len(pieces):
        j = i
        while j + 1 < len(pieces) and pieces[j + 1][1] - pieces[i][0] <= size:
            j += 1
        start, end = pieces[i][0], pieces[j][1]
        chunks.append(Chunk(document.source, start, end, bisect.bisect_right(newlines, start) + 1,
                            bisect.bisect_right(newlines, end - 1) + 1, text[start:end], title))
        if j + 1 == len(pieces):
            break
        k = j + 1   # walk back while the overlap still fits, never back to i (that would not move)
        while k - 1 > i and end - pieces[k - 1][0] <= overlap:
            k -= 1
        i = k
    return chunks


def _pieces(text: str, size: int) -> Iterable[tuple[int, int]]:
    """(start, end) spans of paragraphs, sentences or hard slices, each at most `size`, none blank."""
    for para in _PARAGRAPH.finditer(text):
        if para.end() - para.start() <= size:
            yield para.start(), para.end()
            continue
        for start, end in _sentences(text, para.start(), para.end()):
            start, end = _strip(text, start, end)
            for cut in range(start, end, size):
                piece = _strip(text, cut, min(cut + size, end))
                if piece[0] < piece[1]:
                    yield piece


def _sentences(text: str, start: int, end: int) -> Iterable[tuple[int, int]]:
    """The spans between sentence ends in text[start:end]: together they cover it all."""
    for match in _SENTENCE_END.finditer(text, start, end):
        yield start, match.end()
        start = match.end()
    yield start, end


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


# --- terms: what the keyword index and a query are made of ------------------------------------------

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_WORD = re.compile(r"[^\W_]+(?:[-.][^\W_]+)*")   # "HR-7", "security@tidewater.example" stay whole
STOP_WORDS = frozenset("a an and are as at be by can do does for from how i in is it me my of on or our "
                       "should the this to was we what when where which who why will with you your".split())
# Chinese function and question characters: a run of characters is cut at each of them before it is
# paired, so "HR-7 表是做什么用的" is searched as hr-7 and 表, not also as 是做, 什么, 用的 (which
# match every document and bury the one that matters).
STOP_CHARS = frozenset("的了吗呢吧啊是在和与或我你他她它们这那哪谁什么怎几个")


def terms(text: str) -> list[str]:
    """The terms of a text: lower-cased words and, for CJK runs, overlapping character pairs.

    The same function makes what is indexed and what is searched, so they always agree.
    CJK runs are first cut at STOP_CHARS; a one-character run stays one term. English
    stop words are left out.
    """
    out: list[str] = []
    for piece in re.split(f"({_CJK.pattern})", text.lower()):
        if _CJK.fullmatch(piece):
            for run in re.split(f"[{''.join(sorted(STOP_CHARS))}]+", piece):
                out.extend([run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)])
        else:
            out.extend(w for w in _WORD.findall(piece) if w not in STOP_WORDS)
    return out


def fts_query(query: str) -> str:
    """A safe FTS5 query: each term in double quotes (a quote inside doubled), joined by OR.

    Quoted, a term is a phrase and never an operator, so `NEAR`, `*`, `col:`, `^` and
    unbalanced quotes are matched as text instead of raising a syntax error. OR, with
    BM25 ranking, lets a passage that matches most terms win without requiring all.
    """
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in unique_terms(query))


def unique_terms(query: str) -> list[str]:
    """The distinct terms of a query (at most MAX_QUERY_TERMS, from its first MAX_QUERY_CHARS), in order."""
    return list(dict.fromkeys(terms(query[:MAX_QUERY_CHARS])))[:MAX_QUERY_TERMS]


# --- 3. the index ----------------------------------------------------------------------------------

SCHEMA = """
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, source TEXT NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL,
    line_start INTEGER NOT NULL, line_end INTEGER NOT NULL, text TEXT NOT NULL, title TEXT NOT NULL,
    embedding BLOB);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(terms, tokenize = 'porter unicode61 remove_diacritics 2');
"""


class Index:
    """Chunks in SQLite, searchable by keyword (FTS5), by vector and by both.

    `embed` turns texts into vectors (`local_embedder()`, `api_embedder()`, or your
    own); without it only keyword search works. `path` is a file to keep the index
    in, or ":memory:". An agent runs tools in worker threads, several at once, so the
    connection may be used from any thread, one call at a time (a lock).
    """

    def __init__(self, path: str | os.PathLike = ":memory:", embed: Embedder | None = None) -> None:
        self.db = sqlite3.connect(path, check_same_thread=False)
        self._lock = threading.RLock()
        self.db.executescript(SCHEMA)
        self.embed = embed
        self.vector_engine = "sqlite-vec" if _load_sqlite_vec(self.db) else "numpy"
        self._matrix: Any = None   # numpy's copy of the embeddings, rebuilt after each add

    def add(self, chunks: Iterable[Chunk], batch: int = 256) -> int:
        """Index chunks (and embed them, in batches, when the index has an embedder). Returns how many."""
        chunks = list(chunks)
        with self._lock:
            self._add(chunks, batch)
        return len(chunks)

    def _add(self, chunks: list[Chunk], batch: int) -> None:
        for first in range(0, len(chunks), batch):
            group = chunks[first:first + batch]
            blobs = _blobs(self.embed([_indexed_text(c) for c in group])) if self.embed else [None] * len(group)
            for chunk, blob in zip(group, blobs):
                cursor = self.db.execute(
                    'INSERT INTO chunks (source, start, "end", line_start, line_end, text, title, embedding) '
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (chunk.source, chunk.start, chunk.end, chunk.line_start,
                                                        chunk.line_end, chunk.text, chunk.title, blob))
                self.db.execute("INSERT INTO chunks_fts (rowid, terms) VALUES (?, ?)",
                                (cursor.lastrowid, " ".join(terms(_indexed_text(chunk)))))
        self.db.commit()
        self._matrix = None

    def __len__(self) -> int:
        with self._lock:
            return self.db.execute("SELECT count(*) FROM chunks").fetchone()[0]

    def search(self, query: str, k: int = 3, method: str = "hybrid") -> list[Result]:
        """The k best passages for `query` by "keyword", "vector" or "hybrid" (see `rrf`)."""
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        with self._lock:
            return self._search(query, k, method)

    def _search(self, query: str, k: int, method: str) -> list[Result]:
        if method == "keyword":
            ranked = self._keyword(query, k)
        elif method == "vector":
            ranked = self._vector(query, k)
        else:
            depth = max(k, 20)   # fuse deeper lists than we return: a passage 5th in both should win
            ranked = rrf([[i for i, _ in self._keyword(query, depth)], [i for i, _ in self._vector(query, depth)]])[:k]
        return [Result(self._chunk(i), score, method) for i, score in ranked]

    def _keyword(self, query: str, k: int) -> list[tuple[int, float]]:
        match = fts_query(query)
        if not match:
            return []
        rows = self.db.execute("SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? "
                               "ORDER BY bm25(chunks_fts), rowid LIMIT ?", (match, k)).fetchall()
        return [(rowid, -score) for rowid, score in rows]   # bm25() is lower-is-better; flip it

    def _vector(self, query: str, k: int) -> list[tuple[int, float]]:
        if self.embed is None:
            raise ValueError("this index has no embedder: create it with Index(embed=local_embedder()) "
                             "or api_embedder() for vector or hybrid search")
        if not query.strip():
            return []
        blob = _blobs(self.embed([query[:MAX_QUERY_CHARS]]))[0]
        if self.vector_engine == "sqlite-vec":
            rows = self.db.execute("SELECT id, vec_distance_cosine(embedding, ?) AS d FROM chunks "
                                   "WHERE embedding IS NOT NULL ORDER BY d, id LIMIT ?", (blob, k)).fetchall()
            return [(rowid, 1.0 - distance) for rowid, distance in rows]
        if self._matrix is None:
            self._matrix = normalised_matrix(self.db.execute("SELECT id, embedding FROM chunks WHERE embedding "
                                                             "IS NOT NULL ORDER BY id").fetchall())
        return nearest(self._matrix, blob, k)

    def titles(self) -> list[str]:
        """The distinct document titles, in the order they were added."""
        with self._lock:
            rows = self.db.execute("SELECT title FROM chunks GROUP BY title ORDER BY min(id)").fetchall()
        return [title for (title,) in rows if title]

    def _chunk(self, rowid: int) -> Chunk:
        row = self.db.execute('SELECT source, start, "end", line_start, line_end, text, title FROM chunks '
                              "WHERE id = ?", (rowid,)).fetchone()
        return Chunk(*row)

    def close(self) -> None:
        self.db.close()


def _indexed_text(chunk: Chunk) -> str:
    """What is searched: the document's title, then the chunk (the title is not shown in citations)."""
    return f"{chunk.title}\n{chunk.text}" if chunk.title and not chunk.text.startswith("#") else chunk.text


def normalised_matrix(rows: Sequence[tuple[int, bytes]]) -> tuple[Any, Any]:
    """(ids, matrix) from (id, float32 blob) rows, each row of the matrix scaled to length 1."""
    import numpy as np
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    matrix = np.array([np.frombuffer(r[1], dtype="<f4") for r in rows]) if rows else np.zeros((0, 1), "<f4")
    return ids, matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


def nearest(ids_matrix: tuple[Any, Any], blob: bytes, k: int) -> list[tuple[int, float]]:
    """The k ids whose vectors have the highest cosine similarity with `blob`'s: a brute-force scan in numpy."""
    import numpy as np
    ids, matrix = ids_matrix
    vector = np.frombuffer(blob, dtype="<f4")
    if len(ids) and matrix.shape[1] != vector.shape[0]:
        raise ValueError(f"the index holds vectors of {matrix.shape[1]} numbers but the embedder gives "
                         f"{vector.shape[0]}: search with the embedder the index was built with")
    scores = matrix @ (vector / max(float(np.linalg.norm(vector)), 1e-12))
    order = np.argsort(-scores, kind="stable")[:k]
    return [(int(ids[i]), float(scores[i])) for i in order]


def _blobs(vectors: Sequence[Sequence[float]]) -> list[bytes]:
    """Vectors as little-endian float32 bytes (what sqlite-vec reads, and numpy with dtype '<f4')."""
    import numpy as np
    return [np.asarray(v, dtype="<f4").tobytes() for v in vectors]


def _load_sqlite_vec(db: sqlite3.Connection) -> bool:
    """Load sqlite-vec into this connection if the package is installed and this Python allows extensions."""
    if not hasattr(db, "enable_load_extension"):
        return False
    try:
        import sqlite_vec
        db.enable_load_extension(True)
        sqlite_vec.load(db)
        db.enable_load_extension(False)
    except (ImportError, sqlite3.Error, AttributeError, OSError):
        return False
    return True


def rrf(rankings: Sequence[Sequence[Any]], k: int = RRF_K) -> list[tuple[Any, float]]:
    """Reciprocal rank fusion: merge rankings by rank alone, scores ignored.

    Each item gets, from each ranking it appears in, 1 / (k + rank) (rank 1 is the
    best), and items are sorted by the sum. BM25 scores and cosine similarities are on
    scales that cannot be added, but ranks can. An item that both methods rank well
    beats one that only one method ranks first; k (60, from the paper that proposed
    it) keeps the first ranks from weighing too much. Ties keep the order in which
    items were first seen (the first ranking's order first).
    """
    scores: dict[Any, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])   # sorted() is stable: ties keep first-seen order


def build(folder: str | os.PathLike, embed: Embedder | None = None, size: int = 500, overlap: int = 100,
          path: str | os.PathLike = ":memory:") -> Index:
    """load + split + Index.add in one call."""
    index = Index(path, embed)
    for document in load(folder):
        index.add(split(document, size, overlap))
    return index


# --- embedders -------------------------------------------------------------------------------------


def local_embedder() -> Embedder:
    """WordLlama's bundled 256-dimension static embedding (see the module docstring); loads in ~0.4 s once."""
    model = _wordllama()
    return lambda texts: model.embed(list(texts), norm=True)


@lru_cache(maxsize=1)
def _wordllama() -> Any:
    try:
        wordllama = _import_wordllama()
    except ImportError as exc:
        raise ImportError("local_embedder() needs the wordllama package: pip install wordllama "
                          "(make setup installs it), or use api_embedder()") from exc
    # disable_download: never fetch from a hub. cache_dir: where the wheel's own tokenizers/ folder is.
    return wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)


def _import_wordllama() -> Any:
    """Import wordllama without its side effect: it calls logging.basicConfig(level=INFO) on import,
    which would make every httpx2 request print a log line in a notebook. Undo exactly that."""
    import logging
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    import wordllama
    for handler in root.handlers[:]:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)
    return wordllama


def api_embedder(model: str = "text-embedding-3-small", dimensions: int | None = 256, *,
                 base_url: str | None = None, api_key: str | None = None, offline: bool | None = None,
                 timeout: float = 30.0) -> Embedder:
    """Embeddings from an OpenAI-compatible `/v1/embeddings` endpoint.

    Live when OPENAI_API_KEY (or `api_key`) is set and MINIAGENT_OFFLINE is not; then
    OPENAI_BASE_URL (or `base_url`, default https://api.openai.com/v1) is the server.
    Offline: the bundled mock in-process, whose vectors are hashed bags of words.
    """
    import httpx2
    key = api_key or os.environ.get("OPENAI_API_KEY")
    if offline is None:
        offline = os.environ.get("MINIAGENT_OFFLINE") == "1" or not key
    if offline:
        from miniagent.mock import MockAPI
        http = httpx2.Client(transport=MockAPI().transport(), base_url="http://mock.invalid/v1", timeout=timeout)
        key = "offline"
    else:
        url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        http = httpx2.Client(base_url=url.rstrip("/"), timeout=timeout)

    def embed(texts: list[str]) -> list[list[float]]:
        body: dict[str, Any] = {"model": model, "input": list(texts)}
        if dimensions is not None:
            body["dimensions"] = dimensions
        response = http.post("/embeddings", json=body, headers={"Authorization": f"Bearer {key}"})
        if response.status_code != 200:
            # The message only for errors that cannot quote the key (a 401's text may echo part of it).
            detail = "" if response.status_code in (401, 403) else _error_message(response)
            raise RuntimeError(f"the embeddings endpoint answered HTTP {response.status_code}{detail}")
        data = response.json().get("data")
        if not isinstance(data, list) or len(data) != len(texts):
            raise RuntimeError("the embeddings endpoint answered without one embedding per input")
        return [item["embedding"] for item in sorted(data, key=lambda item: item["index"])]

    return embed


def _error_message(response: Any) -> str:
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return ""
    return f": {str(message)[:300]}"


# --- 4. the search tool ----------------------------------------------------------------------------


def format_results(results: Sequence[Result]) -> str:
    """Passages for a model: each under its citation, so the answer can cite `[source:lines]`."""
    if not results:
        return "No passage matches this query. Try other words, or say that the documents do not cover it."
    return "\n\n".join(f"{r.citation}\n{r.text}" for r in results)


def search_tool(index: Index, k: int = 3, method: str = "hybrid", name: str = "search_documents",
                description: str | None = None) -> Tool:
    """A tool that searches the index and returns passages with citations like [en/leave.md:3-5].

    The model decides whether to search from the description alone, so by default it
    names what the index holds: the titles of its documents.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if description is None:
        titles = ", ".join(index.titles()[:40])[:600]
        description = (f"Search the documents ({titles}). Returns the most relevant passages, each under a "
                       "citation like [en/leave.md:3-5]. Answer from these passages only, and cite the ones you used.")

    def run(query: str) -> str:
        return format_results(index.search(query, k, method if index.embed else "keyword"))

    return Tool(name=name, fn=run, description=description, input_schema={
        "type": "object", "properties": {"query": {"type": "string", "description": "what to look for, in words"}},
        "required": ["query"], "additionalProperties": False})


# --- 5. evaluation ---------------------------------------------------------------------------------


def questions(language: str) -> list[dict]:
    """The shipped question set for "en" or "zh": [{"question": ..., "sources": ["en/leave.md", ...]}]."""
    return json.loads((DATA / language / "questions.json").read_text(encoding="utf-8"))


def recall_at_k(results: Sequence[Result], expected: Iterable[str]) -> float:
    """The share of the expected sources that appear among the results."""
    expected = set(expected)
    return len(expected & {r.source for r in results}) / len(expected) if expected else 1.0


def evaluate(index: Index, question_set: Sequence[dict], k: int = 3,
             methods: Sequence[str] = METHODS) -> dict[str, dict[str, float]]:
    """Recall@k and the mean time per query (ms) of each method: {method: {"recall": r, "ms": t}}."""
    report = {}
    for method in methods:
        started, total = time.perf_counter(), 0.0
        for item in question_set:
            total += recall_at_k(index.search(item["question"], k, method), item["sources"])
        elapsed = time.perf_counter() - started
        report[method] = {"recall": total / max(1, len(question_set)),
                          "ms": 1000 * elapsed / max(1, len(question_set))}
    return report
