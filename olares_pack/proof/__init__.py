"""An independent proof that two charts make the same app (`import --structured` checks its typed
render with it). It shares no reading with the importer: it never imports engines/normalize.py,
engines/detect.py, olares_pack.importing or olares_pack.equivalence (tests/test_import_proof.py
checks that). Arguments are compared as written, each flag with the words after it; an alias is
resolved only through the engine's own flag table of that build (engines/registry.py, generated
from llama.cpp's sources and `llama-server --help`); a shell script is compared as its text; the
manifests as the installer reads them, key by key."""
