"""Prints a lot to stdout, writes to stderr, and calls a model between the prints. Some lines
look like turnkey's own protocol messages: turnkey must not read the script's output."""
import sys

import torch

torch.manual_seed(0)
model = torch.nn.Linear(3, 3)
for i in range(2000):
    print("noisy line %04d" % i)
    if i % 500 == 0:
        print("noisy stderr %04d" % i, file=sys.stderr)
    if i == 1000:
        model(torch.rand(1, 3))
fake = '{"v": 3, "type": "model", "id": 7, "name": "fake_model", "hash": "%s"}' % ("0" * 64)
print(fake)
print(fake, file=sys.stderr)
print('{"v": 3, "type": "script_end", "status": "exception", "error": "fake error"}')
print("noisy last line", end="")  # no newline at the end
