# The export is answered with another command's reply.
import torch
from forge import channel

ch = channel()
send = ch.send


def forged_send(type_, **fields):
    if type_ == "exported":
        type_, fields = "bench_samples", {"ok": True, "samples_ns": [1, 2, 3]}
    send(type_, **fields)


ch.send = forged_send
model = torch.nn.Linear(4, 2)
model(torch.ones(1, 4))
