"""llama-benchy without network: seed its corpus cache (it downloads a book by URL, cached under
~/.cache/llama-benchy/<md5 of the URL>.txt) with local text, and write a word-level tokenizer.json
for that text. Its prompt sizes then count words, not the model's tokens; its generation figures
come from the server's usage and its own clock.
    python3 benchy_offline.py CACHE_DIR TOKENIZER_JSON"""

import hashlib
import json
import sys
from pathlib import Path

from olares_pack.bench.method import DEFAULT_PROMPT

BOOK = "https://www.gutenberg.org/files/1661/1661-0.txt"  # llama-benchy 0.4.0's default --book-url
text = "\n".join(f"Chapter {i}. {DEFAULT_PROMPT}" for i in range(400))
Path(sys.argv[1], hashlib.md5(BOOK.encode()).hexdigest() + ".txt").write_text(text, encoding="utf-8")
words = sorted({w for w in text.replace(".", " . ").replace(",", " , ").split()})
vocab = {"[UNK]": 0} | {w: i + 1 for i, w in enumerate(words)}
tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
       "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None,
       "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
       "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}}
Path(sys.argv[2]).write_text(json.dumps(tok), encoding="utf-8")
