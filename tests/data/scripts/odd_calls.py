"""Calls users make that are easy to get wrong: *args with a keyword int and **kwargs, a
namedtuple holding a tuple with None and an int, inference mode, float64, a forward that writes
into its input, BatchNorm in training mode, a model held only by a closure, a model built and
called in a thread, and a 0-d tensor."""
import collections
import threading

import torch

torch.manual_seed(0)
Pair = collections.namedtuple("Pair", "main extras")


class VarArgs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 3)

    def forward(self, *xs, scale=1, **extra):
        y = sum(self.fc(x) for x in xs) * scale
        if extra.get("bias") is not None:
            y = y + extra["bias"]
        return Pair(y, (y * 2, None, 3))


class InPlace(torch.nn.Module):
    def forward(self, x):
        x.add_(1)  # the script's tensor changes; the captured input must be the one passed in
        return x * 2


varargs = VarArgs()
varargs(torch.rand(1, 3), torch.rand(1, 3), scale=2, bias=torch.rand(3))
with torch.inference_mode():
    inference = torch.nn.Linear(3, 1)
    inference(torch.rand(4, 3))
double = torch.nn.Linear(3, 2).double()
double(torch.rand(1, 3, dtype=torch.float64))
in_place = InPlace()
zeros = torch.zeros(2)
in_place(zeros)
norm = torch.nn.BatchNorm1d(3)
norm(torch.rand(4, 3))


def make_closure():
    hidden = torch.nn.Linear(2, 2)

    def call(x):
        return hidden(x)

    return call


make_closure()(torch.rand(1, 2))


def worker():
    threaded = torch.nn.Linear(5, 1)
    threaded(torch.rand(1, 5))


thread = threading.Thread(target=worker)
thread.start()
thread.join()
scalar = torch.nn.Identity()
scalar(torch.tensor(3.0))
print("odd_calls done", zeros.tolist())
