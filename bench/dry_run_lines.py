"""What the corpus dry runs (bench/transformers_dry_run.py, bench/timm_dry_run.py) share: the one
line a failed script gets, and the loop over scripts."""

import logging
import sys
import warnings

from turnkeyml.corpus_inputs.config import meets_meta_weights, shape_depends_on_data
# A forward that reads a meta tensor's values: only a real run says.
_READS_VALUES = "tolist() shouldn't be called on a tensor with unallocated storage"



def failure(error, *where):
    """`INCONCLUSIVE|FAIL <where...> error-type message` for an exception of a dry run."""
    kind = type(error).__name__
    message = (str(error).strip().splitlines() or [""])[0][:160]
    # meets_meta_weights: the dry run's own limit. Session 17 ran the 11 scripts that met it
    # (XLNet's 5, ImageGPT's 2, Deformable DETR, FastSpeech 2's 2, Mask2Former) for real: all
    # 11 end their forward (FastSpeech 2 with HiFi-GAN once corpus_inputs read its vocabulary).
    verdict = ("INCONCLUSIVE" if shape_depends_on_data(error) or meets_meta_weights(error)
               or _READS_VALUES in message else "FAIL")
    return " ".join([verdict, *map(str, where), kind, message])


def main(dry_run):
    """Prints dry_run(path) for each path of the command line, as it goes."""
    warnings.filterwarnings("ignore")
    logging.disable(logging.CRITICAL)
    for path in sys.argv[1:]:
        print(dry_run(path), flush=True)
    return 0
