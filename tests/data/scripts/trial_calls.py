"""Library code trying which inputs a model takes before the script's own call
(turnkeyml.trials.trial_call, as turnkeyml.corpus_inputs does where fake tensors cannot judge a
layout): one try the forward refuses, one it takes; neither is an execution. Only the script's
call is: one model, executed once, with that call's input."""
import torch

from turnkeyml import trials

torch.manual_seed(0)
model = torch.nn.Linear(3, 2)
try:
    trials.trial_call(model, input=torch.rand(1, 4))
except RuntimeError:
    pass
trials.trial_call(model, input=torch.rand(5, 3))
print("trial_calls done", tuple(model(torch.rand(1, 3)).shape))
