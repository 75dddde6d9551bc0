"""The synthetic prompt both sides prefill: the same text and token ids `staticlm bench` uses.

`staticlm bench` tokenizes a fixed English paragraph (BenchParagraph() in
tools/staticlm/bench_prompt.cpp) with the model's tokenizer, BOS first if the model adds one,
then repeats the paragraph's tokens (without BOS) to the length needed. We read the paragraph
from that source file so the two never drift apart; the copy below is only a fallback.
"""

import os
import re

SOURCE = os.path.join("tools", "staticlm", "bench_prompt.cpp")

_FALLBACK = (
    "The old harbour town wakes early. Before the sun clears the hills, the fishing boats "
    "are already out past the breakwater, and the baker on the corner has lit his ovens. "
    "By seven the market square is full of crates of apples, bundles of herbs and the "
    "smell of fresh bread. Children walk to school along the sea wall, counting the gulls "
    "that sit on the railings. In the afternoon the wind turns, the boats come home, and "
    "the fishermen sort their catch on the quay while visitors take photographs of the "
    "lighthouse. When evening comes, the lamps along the promenade are switched on one by "
    "one, and the town grows quiet again. ")


def bench_paragraph(repo):
    """(text, where it came from). Parses the string literals of BenchParagraph()."""
    path = os.path.join(repo, SOURCE)
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except OSError:
        return _FALLBACK, "embedded copy (could not read %s)" % SOURCE
    body = re.search(r"BenchParagraph\(\)\s*\{\s*return(.*?);", source, re.S)
    if not body:
        return _FALLBACK, "embedded copy (BenchParagraph() not found in %s)" % SOURCE
    pieces = re.findall(r'"((?:[^"\\]|\\.)*)"', body.group(1))
    text = "".join(pieces).encode("utf-8").decode("unicode_escape")
    return text, SOURCE + " BenchParagraph()"


def repeated_tokens(paragraph_ids, has_bos, count):
    """`count` ids: the paragraph's ids, then its ids without BOS repeated, as staticlm does."""
    start = 1 if has_bos and len(paragraph_ids) > 1 else 0
    body = paragraph_ids[start:]
    if not body:
        raise ValueError("the benchmark paragraph tokenized to nothing")
    out = list(paragraph_ids)
    i = 0
    while len(out) < count:
        out.append(body[i % len(body)])
        i += 1
    return out[:count]
