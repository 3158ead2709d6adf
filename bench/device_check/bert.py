# labels: test_group::device_check
"""A BERT-base encoder (12 layers, 768 wide) from transformers' BertConfig with random weights
(no download; run with HF_HUB_OFFLINE=1), batch 1, sequence 128: the device check's transformer
(bench/device-check). `model` and `inputs` are what bare_loop.py times."""
import torch
from transformers import BertConfig, BertModel

torch.manual_seed(0)
model = BertModel(BertConfig()).eval()
inputs = {
    "input_ids": torch.randint(0, BertConfig().vocab_size, (1, 128)),
    "attention_mask": torch.ones(1, 128, dtype=torch.int64),
}
outputs = model(**inputs)
print(f"bert last_hidden_state: {tuple(outputs.last_hidden_state.shape)}")
