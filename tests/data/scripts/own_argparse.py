"""A script with its own argparse flags: turnkey passes them through --script-args."""
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--batch_size", type=int, default=1)
parser.add_argument("--name", default="unnamed")
args = parser.parse_args()
print("own_argparse name=<%s> batch_size=%d" % (args.name, args.batch_size))
torch.manual_seed(0)
model = torch.nn.Linear(8, 2)
model(torch.rand(args.batch_size, 8))
