"""Time budgets of the export's optional steps, each read from its TURNKEY_*_BUDGET_S variable
(the float64 reference run, onnxscript's optimizer). `turnkey` refuses an invalid value before
any script runs (src/common/env.cpp); the Python side alone logs a line and uses the default."""

import os


def seconds(variable, default, log):
    """The budget in seconds: the environment variable `variable`, else `default` (also, with a
    line appended to `log`, where the variable is not a number of seconds >= 0)."""
    value = os.environ.get(variable, "")
    try:
        budget = float(value) if value else default
        if budget >= 0:
            return budget
    except ValueError:
        pass
    log.append("%s=%r is not a number of seconds: %g s used" % (variable, value, default))
    return default
