# Not hostile: 600 MB held by the script, then three children that share it copy-on-write while they
# live. Each process's resident memory counts the 600 MB (2.4 GB in all, over a 1G limit); their
# proportional shares add up to about 600 MB, under it: the script is not killed.
import os
import time

import torch

torch.manual_seed(0)

held = bytearray(600 << 20)  # zero-filled, then touched page by page
for i in range(0, len(held), 4096):
    held[i] = 1
children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        time.sleep(3)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)

model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU())
model(torch.randn(1, 16))
