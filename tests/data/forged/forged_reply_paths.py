# The export's reply names files the core did not ask for: its inputs are /etc/passwd.
import torch
from forge import channel

ch = channel()
send = ch.send


def forged_send(type_, **fields):
    if type_ == "exported":
        fields["inputs"] = ["/etc/passwd"]
    send(type_, **fields)


ch.send = forged_send
model = torch.nn.Linear(4, 2)
model(torch.ones(1, 4))
