"""Calls of a model whose outputs are thrown away: library code (turnkeyml.corpus_inputs) trying
which inputs a forward takes before the script's own call. Under turnkey such a call is not an
execution of the model (discovery/hooks.py wraps trial_call as it wraps torch.jit's trace
check): it is neither discovered nor counted. Outside turnkey it is a plain call. Call it as
`trials.trial_call(...)`, through the module, so that the wrapper is the one called."""


def trial_call(function, **kwargs):
    """function(**kwargs), not an execution for turnkey's discovery."""
    return function(**kwargs)
