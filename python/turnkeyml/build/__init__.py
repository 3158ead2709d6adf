"""Build sequences in Python: the reference tool's `Sequence` and `Stage` (stage.py), its
built-in stage classes (export.py) as turnkey's tools, and custom stages written in Python
(docs/sequences.md). `python -m turnkeyml.build` is what the C++ core runs to read a sequence
file and to run a custom stage."""
