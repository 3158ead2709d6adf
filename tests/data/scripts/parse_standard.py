# labels: test_group::parse author::turnkey_tests
"""Uses the corpus's standard arguments through turnkeyml.parser.parse; runs as a plain script
too (`python3 parse_standard.py --batch_size 8`)."""
import torch

from turnkeyml.parser import parse

batch_size, max_seq_length, pretrained = parse(["batch_size", "max_seq_length", "pretrained"])
print("parse_standard batch_size=%d max_seq_length=%d pretrained=%s"
      % (batch_size, max_seq_length, pretrained))
torch.manual_seed(0)
model = torch.nn.Linear(max_seq_length, 2)
out = model(torch.rand(batch_size, max_seq_length))
print("parse_standard output shape", tuple(out.shape))
